#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The whole answer of one ``sync(url:trust:context:conditional:options:)``: the outcome,
/// the check's time, and the conditional headers to send next time.
public struct SyncResult: Sendable, Equatable, Codable, CustomStringConvertible {
    /// What happened.
    public var outcome: SyncOutcome
    /// The URL that was checked (before any redirect).
    public var url: String
    /// When the check happened (the context's `now`). Record it as "last successful check"
    /// when ``isSuccessfulCheck`` is true.
    public var checkedAt: Date
    /// The validators to pass as `conditional` to the next sync. After a failed check these
    /// are the ones passed in, unchanged; after a successful one, the server's new ones.
    public var conditional: ConditionalHeaders
    /// The serial and expiry of the directive fetched, once its signature verified for this
    /// app (whatever came next: applied, not applicable, refused as a replay or expired); nil
    /// for a 304 or a failed check. The caller remembers the highest serial seen from it.
    public var authentic: AuthenticDirective?

    /// Creates a result; ``sync(url:trust:context:conditional:options:)`` builds these.
    public init(outcome: SyncOutcome, url: String, checkedAt: Date, conditional: ConditionalHeaders,
                authentic: AuthenticDirective? = nil) {
        self.outcome = outcome
        self.url = url
        self.checkedAt = checkedAt
        self.conditional = conditional
        self.authentic = authentic
    }

    /// True for applied, unchanged and not-applicable outcomes.
    public var isSuccessfulCheck: Bool { outcome.isSuccessfulCheck }

    /// Whether this check proves the install's view fresh: a directive was fetched (not a
    /// 304), verified, and judged good (applied, the one in force, or not for this install).
    /// Only such a check moves "last verified" and the held directive's expiry.
    public var provesFreshness: Bool { authentic != nil && outcome.isSuccessfulCheck }

    /// One sentence for `rollbackctl status`.
    public var description: String { outcome.description }

    private enum CodingKeys: String, CodingKey {
        case outcome, url, checkedAt = "checked_at", conditional, authentic
    }

    /// Decodes the form written by ``encode(to:)``; `checked_at` is an RFC 3339 time.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        outcome = try container.decode(SyncOutcome.self, forKey: .outcome)
        url = try container.decode(String.self, forKey: .url)
        let text = try container.decode(String.self, forKey: .checkedAt)
        guard let date = Directive.parseTime(text) else {
            throw DecodingError.dataCorruptedError(forKey: .checkedAt, in: container, debugDescription: "checked_at \"\(text)\" is not an RFC 3339 time")
        }
        checkedAt = date
        conditional = try container.decodeIfPresent(ConditionalHeaders.self, forKey: .conditional) ?? .none
        authentic = try container.decodeIfPresent(AuthenticDirective.self, forKey: .authentic)
    }

    /// Encodes with snake_case keys and `checked_at` as an RFC 3339 UTC time (whole seconds).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(outcome, forKey: .outcome)
        try container.encode(url, forKey: .url)
        try container.encode(Directive.formatTime(checkedAt), forKey: .checkedAt)
        try container.encode(conditional, forKey: .conditional)
        try container.encodeIfPresent(authentic, forKey: .authentic)
    }
}

/// What a sync remembers of an authentic directive, applied or not.
public struct AuthenticDirective: Sendable, Equatable, Codable {
    /// Its serial.
    public var serial: UInt64
    /// Its `expires_at`, in seconds since the epoch.
    public var expiresAt: Int64

    /// Creates a value.
    public init(serial: UInt64, expiresAt: Int64) {
        self.serial = serial
        self.expiresAt = expiresAt
    }

    /// The serial and expiry of `directive`.
    public init(_ directive: Directive) {
        self.init(serial: directive.serial, expiresAt: Int64(directive.expiresAt.timeIntervalSince1970.rounded(.down)))
    }

    private enum CodingKeys: String, CodingKey {
        case serial, expiresAt = "expires_at"
    }
}
