import Foundation

/// What the evaluator needs to know about this install.
public struct InstallContext: Sendable, Equatable {
    /// The version of the current slot (from the manifest), matched against `applies_to`.
    public var currentVersion: String
    /// A stable, per-install random id (persisted by the caller), hashed for rollout buckets.
    public var installID: String
    /// The serial of the last directive this install applied, or nil if none yet.
    public var lastAcceptedSerial: UInt64?
    /// The time to judge expiry against; also stamped on the result as the check time.
    public var now: Date

    /// Creates a context; `now` defaults to the current time.
    public init(currentVersion: String, installID: String, lastAcceptedSerial: UInt64? = nil, now: Date = Date()) {
        self.currentVersion = currentVersion
        self.installID = installID
        self.lastAcceptedSerial = lastAcceptedSerial
        self.now = now
    }
}
