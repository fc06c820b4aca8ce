extension Version: Codable {
    /// Decodes a version from a single string, with the tolerant rules of ``init(tolerant:)``.
    ///
    /// - Throws: `DecodingError.dataCorrupted` whose description is the parse error's sentence.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        do {
            self = try Version(tolerant: string)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
        }
    }

    /// Encodes the version as its canonical string, such as `"1.2.0-rc.1"`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
