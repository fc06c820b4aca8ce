/// Why an install's view of the remote directive is stale, and since when: the held
/// directive is past its expiry, or no directive has verified within the staleness limit
/// (`remote.max_staleness_s`). A stale install keeps its decision; it only says so (status,
/// metrics, history), because a server that answers 304 for ever, or an attacker who
/// replays an old answer, could otherwise hide a newer, urgent directive (TUF's freeze attack).
///
/// Computed by ``RemoteRecord/staleness(now:maxStalenessSeconds:)``, a pure function of the
/// record, so `status`, the metrics exporter and `sync` agree without a clock of their own.
public struct RemoteStaleness: Sendable, Equatable {
    /// What made the install stale.
    public enum Cause: String, Sendable, Equatable, CaseIterable {
        /// The directive last verified is past its `expires_at`, and no newer one has verified.
        case heldDirectiveExpired = "held_directive_expired"
        /// No directive has verified within `remote.max_staleness_s` (or ever, since the first check).
        case notVerifiedRecently = "not_verified_recently"
    }

    /// What made the install stale (the earlier of the two when both hold).
    public var cause: Cause
    /// When the install became stale (seconds since the epoch).
    public var since: Int64
    /// When a directive last verified, if ever.
    public var lastVerifiedAt: Int64?
    /// The staleness limit applied, in seconds.
    public var maxStalenessSeconds: Int64

    /// Creates a value; ``RemoteRecord/staleness(now:maxStalenessSeconds:)`` builds these.
    public init(cause: Cause, since: Int64, lastVerifiedAt: Int64?, maxStalenessSeconds: Int64) {
        self.cause = cause
        self.since = since
        self.lastVerifiedAt = lastVerifiedAt
        self.maxStalenessSeconds = maxStalenessSeconds
    }

    /// One sentence that tells the operator what is wrong and what to do; the decision stays.
    public var description: String {
        let what: String
        switch cause {
        case .heldDirectiveExpired:
            what = "the directive this install holds expired at \(formatUTC(since)) and none has verified since"
        case .notVerifiedRecently:
            let limit = Self.durationText(maxStalenessSeconds)
            if let lastVerifiedAt {
                what = "no directive has verified since \(formatUTC(lastVerifiedAt)) (the limit is \(limit))"
            } else {
                what = "no directive has verified in the \(limit) since this install's first check"
            }
        }
        return "Stale: \(what); the decision stays, so publish a fresh directive (rollbackctl sign --renew) and check that this install reaches the server."
    }

    /// "86400 s (1 d)", "90 s", "2 h".
    static func durationText(_ seconds: Int64) -> String {
        if seconds >= 86_400 && seconds % 86_400 == 0 { return "\(seconds / 86_400) d" }
        if seconds >= 3600 && seconds % 3600 == 0 { return "\(seconds / 3600) h" }
        if seconds >= 60 && seconds % 60 == 0 { return "\(seconds / 60) min" }
        return "\(seconds) s"
    }
}

extension RemoteRecord {
    /// Whether the install's view of the remote directive is stale at `now`, and why; nil when
    /// it is fresh or nothing was ever checked.
    ///
    /// Stale once the held directive is past its expiry (`heldExpiresAt`), or once no
    /// directive has verified (`lastVerifiedAt`, moved only by a fetched 200 whose signature
    /// verified — never by a 304) for `maxStalenessSeconds`; an install that never verified
    /// one counts from its first check (`firstAttemptAt`). Pure: the same record and `now`
    /// always give the same answer.
    public func staleness(now: Int64, maxStalenessSeconds: Int64) -> RemoteStaleness? {
        let limit = max(1, maxStalenessSeconds)
        var candidates: [(RemoteStaleness.Cause, Int64)] = []
        if let expiry = heldExpiresAt, now >= expiry {
            candidates.append((.heldDirectiveExpired, expiry))
        }
        if let reference = lastVerifiedAt ?? firstAttemptAt {
            let (since, overflow) = reference.addingReportingOverflow(limit)
            if !overflow && now >= since { candidates.append((.notVerifiedRecently, since)) }
        }
        guard let first = candidates.min(by: { $0.1 < $1.1 }) else { return nil }
        return RemoteStaleness(cause: first.0, since: first.1, lastVerifiedAt: lastVerifiedAt, maxStalenessSeconds: limit)
    }
}

extension RemoteRecord {
    /// Whether the next check may send the remembered validators (`If-None-Match`,
    /// `If-Modified-Since`), so that a change is seen within two checks whatever the server's
    /// validators are worth:
    /// - never right after a check that was answered 304 (outcome `unchanged`, code
    ///   `not_modified`): a 304 is never followed by another, so a server whose validators miss
    ///   a change (nginx's mtime-size ETag, a directive replaced within the same second at the
    ///   same size) is asked unconditionally at the next check;
    /// - never when no directive has verified within half the staleness limit, so a fresh
    ///   directive is fetched (and freshness proved) well before the install goes stale.
    public func mayUseValidators(now: Int64, maxStalenessSeconds: Int64) -> Bool {
        guard let verified = lastVerifiedAt else { return false }
        if outcome == "unchanged" && code == "not_modified" { return false }
        return now - verified < max(1, maxStalenessSeconds) / 2
    }
}
