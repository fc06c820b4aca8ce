/// A flat JSON form for the state file and `status --json`:
/// `{"kind":"refused","code":"bad_signature","reason":"…"}`,
/// `{"kind":"applied","directive":{…}}`, `{"kind":"unchanged","serial":7}`.
extension SyncOutcome: Codable {
    private enum CodingKeys: String, CodingKey {
        case kind, code, reason, directive, serial
    }

    /// Decodes the flat form written by ``encode(to:)``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try container.decode(String.self, forKey: .kind)
        switch kind {
        case "applied":
            self = .applied(try container.decode(Directive.self, forKey: .directive))
        case "unchanged":
            self = .unchanged(serial: try container.decodeIfPresent(UInt64.self, forKey: .serial))
        case "not_applicable":
            self = .notApplicable(try container.decode(NotApplicableCode.self, forKey: .code), reason: try container.decode(String.self, forKey: .reason))
        case "refused":
            self = .refused(try container.decode(RefusalCode.self, forKey: .code), reason: try container.decode(String.self, forKey: .reason))
        case "unreachable":
            self = .unreachable(try container.decode(UnreachableCode.self, forKey: .code), reason: try container.decode(String.self, forKey: .reason))
        default:
            throw DecodingError.dataCorruptedError(forKey: .kind, in: container, debugDescription: "unknown sync outcome kind \"\(kind)\"")
        }
    }

    /// Encodes the flat form; `reason` is always the one-sentence ``description``.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encodeIfPresent(code, forKey: .code)
        try container.encode(description, forKey: .reason)
        switch self {
        case .applied(let directive): try container.encode(directive, forKey: .directive)
        case .unchanged(let serial): try container.encodeIfPresent(serial, forKey: .serial)
        default: break
        }
    }
}
