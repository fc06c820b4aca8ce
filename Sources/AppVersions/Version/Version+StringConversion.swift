extension Version: CustomStringConvertible, LosslessStringConvertible, ExpressibleByStringLiteral {
    /// The canonical SemVer form, such as `1.2.0-beta.1+abc`; parsing it gives back an identical value.
    public var description: String {
        var text = "\(major).\(minor).\(patch)"
        if !prereleaseIdentifiers.isEmpty {
            text += "-" + prereleaseIdentifiers.joined(separator: ".")
        }
        if !buildMetadataIdentifiers.isEmpty {
            text += "+" + buildMetadataIdentifiers.joined(separator: ".")
        }
        return text
    }

    /// Parses `description` with the tolerant rules of ``init(tolerant:)``; `nil` if it is not a version.
    ///
    /// Note that `Version("1.2")` with a *literal* argument is Swift's literal coercion,
    /// which calls ``init(stringLiteral:)`` and is not optional; pass a `String` value
    /// (or use ``init(parsing:)``) for text that comes from outside.
    public init?(_ description: String) {
        guard let version = try? Version(tolerant: description) else { return nil }
        self = version
    }

    /// Creates a version from a literal such as `"1.2.0"` or `"1.2"`.
    ///
    /// Traps with the parse error if the literal is not a version: a literal is source
    /// code, so an invalid one is a programmer mistake.
    public init(stringLiteral value: String) {
        do {
            self = try Version(tolerant: value)
        } catch {
            fatalError("\(error)")
        }
    }
}
