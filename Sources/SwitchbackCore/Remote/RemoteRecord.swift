/// What the last remote directive checks found: the `remote` file in the state directory,
/// in the `key=value` format of `KeyValueText` (so `rollbackctl status` reads it without
/// networking). Written only by `rollbackctl sync`, atomically, under the state lock.
///
///     format=1
///     url=https://updates.example.com/notes/directive.json
///     last_attempt_at=1795317164
///     last_success_at=1795317164
///     outcome=refused
///     code=bad_signature
///     reason=The directive's signature by key 3037aac17ad3ae4a does not verify; ...
///     accepted_serial=41
///     etag="5d41402abc4b2a76"
///     end=ok
public struct RemoteRecord: Sendable, Equatable {
    /// The format this version writes.
    public static let currentFormat = 1

    /// The URL of the last check.
    public var url: String?
    /// When the last check ran, success or not (seconds since the epoch).
    public var lastAttemptAt: Int64?
    /// When this install first checked (set once by sync): staleness counts from here until a
    /// directive verifies.
    public var firstAttemptAt: Int64?
    /// When a check last reached the server and got an authentic answer.
    public var lastSuccessAt: Int64?
    /// The last outcome's kind: applied, unchanged, not_applicable, refused, unreachable.
    public var outcome: String?
    /// The last outcome's code (`bad_signature`, `timed_out`, ...), if it has one.
    public var code: String?
    /// The last outcome in one sentence.
    public var reason: String?
    /// The serial of the last directive applied; an older one is refused as a replay.
    public var acceptedSerial: UInt64?
    /// The highest serial of any directive whose signature verified, applied or not (not
    /// applicable, outside the rollout, already in force): anything lower is a replay.
    public var highestSeenSerial: UInt64?
    /// When a directive last verified (a fresh 200 whose signature checked out; a 304 is not
    /// proof of freshness and does not move it).
    public var lastVerifiedAt: Int64?
    /// The expiry of the directive last verified: once past, the install is stale.
    public var heldExpiresAt: Int64?
    /// The `since` of the stale episode already written to the history (one `remote_stale`
    /// event per episode); cleared when the install is fresh again.
    public var staleReportedSince: Int64?
    /// Checks in a row that did not reach the server or got no authentic answer (the backoff's
    /// input): 0 after a successful check (applied, unchanged, not applicable), one more after
    /// any other outcome (unreachable, refused, not applied).
    public var consecutiveFailures: Int?

    /// The validators of the last successful fetch, sent as If-None-Match / If-Modified-Since.
    public var etag: String?
    public var lastModified: String?
    /// The URL and current-slot version those validators were obtained for.
    public var validatorsURL: String?
    public var validatorsVersion: String?

    public init() {}

    /// The file's text.
    public func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("format", String(Self.currentFormat))
        func add(_ key: String, _ value: String?) { if let value { text.append(key, value) } }
        add("url", url)
        add("first_attempt_at", firstAttemptAt.map { String($0) })
        add("last_attempt_at", lastAttemptAt.map { String($0) })
        add("last_success_at", lastSuccessAt.map { String($0) })
        add("outcome", outcome)
        add("code", code)
        add("reason", reason)
        add("accepted_serial", acceptedSerial.map { String($0) })
        add("highest_seen_serial", highestSeenSerial.map { String($0) })
        add("last_verified_at", lastVerifiedAt.map { String($0) })
        add("held_expires_at", heldExpiresAt.map { String($0) })
        add("consecutive_failures", consecutiveFailures.map { String($0) })
        add("stale_reported_since", staleReportedSince.map { String($0) })
        add("etag", etag)
        add("last_modified", lastModified)
        add("validators_url", validatorsURL)
        add("validators_version", validatorsVersion)
        text.append("end", "ok")
        return text.serialized()
    }

    /// Parses the file. Throws `.stateInvalid` for a truncated or garbage file, or a time
    /// outside `ValueRange.unixTime` or a serial that is not a whole number.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> RemoteRecord {
        let text = try KeyValueText.parse(bytes, describing: "The remote check record \(path)")
        guard text["format"] != nil, text["end"] == "ok" else {
            throw SwitchbackError(.stateInvalid, "The remote check record \(path) is truncated or not a Switchback file.", path: path)
        }
        var record = RemoteRecord()
        record.url = text["url"]
        func invalid(_ what: String) -> SwitchbackError {
            SwitchbackError(.stateInvalid, "The remote check record \(path) \(what); the next sync writes a new one.", path: path)
        }
        record.firstAttemptAt = try text.integer("first_attempt_at", in: ValueRange.unixTime, invalid: invalid)
        record.lastAttemptAt = try text.integer("last_attempt_at", in: ValueRange.unixTime, invalid: invalid)
        record.lastSuccessAt = try text.integer("last_success_at", in: ValueRange.unixTime, invalid: invalid)
        record.outcome = text["outcome"]
        record.code = text["code"]
        record.reason = text["reason"]
        record.acceptedSerial = try text.integer("accepted_serial", in: UInt64.min...UInt64.max, invalid: invalid)
        record.highestSeenSerial = try text.integer("highest_seen_serial", in: UInt64.min...UInt64.max, invalid: invalid)
        record.lastVerifiedAt = try text.integer("last_verified_at", in: ValueRange.unixTime, invalid: invalid)
        record.heldExpiresAt = try text.integer("held_expires_at", in: ValueRange.unixTime, invalid: invalid)
        record.consecutiveFailures = try text.integer("consecutive_failures", in: 0...1_000_000, invalid: invalid)
        record.staleReportedSince = try text.integer("stale_reported_since", in: ValueRange.unixTime, invalid: invalid)
        record.etag = text["etag"]
        record.lastModified = text["last_modified"]
        record.validatorsURL = text["validators_url"]
        record.validatorsVersion = text["validators_version"]
        return record
    }
}
