#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The wire form: snake_case keys, RFC 3339 UTC times (`2026-05-01T12:00:00Z`), and no
/// unknown keys (a later format gets a new signing prefix, so a v1 reader never silently
/// ignores a constraint it does not understand).
extension Directive: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case appID = "app_id"
        case serial
        case issuedAt = "issued_at"
        case expiresAt = "expires_at"
        case decision
        case appliesTo = "applies_to"
        case rolloutPercent = "rollout_percent"
        case reason
    }

    /// Any key, to detect unknown ones.
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes and validates a directive; unknown keys and broken rules are errors.
    public init(from decoder: any Decoder) throws {
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        let all = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
        if let unknown = all.first(where: { !known.contains($0) }) {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown field \"\(unknown)\""))
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func date(_ key: CodingKeys) throws -> Date {
            let text = try container.decode(String.self, forKey: key)
            guard let date = Self.parseTime(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(key.rawValue) \"\(text)\" is not an RFC 3339 UTC time like 2026-05-01T12:00:00Z")
            }
            return date
        }
        self.init(
            appID: try container.decode(String.self, forKey: .appID),
            serial: try container.decode(UInt64.self, forKey: .serial),
            issuedAt: try date(.issuedAt),
            expiresAt: try date(.expiresAt),
            decision: try container.decode(DirectiveDecision.self, forKey: .decision),
            appliesTo: try container.decode([String].self, forKey: .appliesTo),
            rolloutPercent: try container.decodeIfPresent(Int.self, forKey: .rolloutPercent),
            reason: try container.decode(String.self, forKey: .reason)
        )
        do {
            try validate()
        } catch let error as RemoteError {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: error.detail ?? "invalid directive"))
        }
    }

    /// Encodes the wire form; `rollout_percent` is omitted when nil.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(appID, forKey: .appID)
        try container.encode(serial, forKey: .serial)
        try container.encode(Self.formatTime(issuedAt), forKey: .issuedAt)
        try container.encode(Self.formatTime(expiresAt), forKey: .expiresAt)
        try container.encode(decision, forKey: .decision)
        try container.encode(appliesTo, forKey: .appliesTo)
        try container.encodeIfPresent(rolloutPercent, forKey: .rolloutPercent)
        try container.encode(reason, forKey: .reason)
    }

    /// `2026-05-01T12:00:00Z`: RFC 3339, UTC, whole seconds.
    public static func formatTime(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
    }

    /// Parses an RFC 3339 time (`Z` or an offset, optional fractional seconds), or nil.
    public static func parseTime(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
        return try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
    }

    /// The directive as the JSON bytes that get signed: sorted keys, compact.
    ///
    /// Throws ``RemoteError`` with code ``RemoteError/Code/invalidDirective`` if it breaks a rule.
    public func jsonData() throws -> Data {
        try validate()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(self)
        } catch {
            throw RemoteError(.invalidDirective, detail: "\(error)")
        }
    }
}
