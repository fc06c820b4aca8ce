#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the evaluator needs to know about this install.
public struct InstallContext: Sendable, Equatable {
    /// The version of the current slot (from the manifest), matched against `applies_to`.
    public var currentVersion: String
    /// A stable, per-install random id (persisted by the caller), hashed for rollout buckets.
    public var installID: String
    /// The serial of the last directive this install applied, or nil if none yet.
    public var lastAcceptedSerial: UInt64?
    /// The highest serial of any authentic directive this install has seen, applied or not
    /// (outside the rollout, for another version, already in force): anything lower is a replay.
    public var highestSeenSerial: UInt64?
    /// The time to judge expiry against; also stamped on the result as the check time.
    public var now: Date

    /// Creates a context; `now` defaults to the current time.
    public init(currentVersion: String, installID: String, lastAcceptedSerial: UInt64? = nil,
                highestSeenSerial: UInt64? = nil, now: Date = Date()) {
        self.currentVersion = currentVersion
        self.installID = installID
        self.lastAcceptedSerial = lastAcceptedSerial
        self.highestSeenSerial = highestSeenSerial
        self.now = now
    }

    /// The lowest serial not refused as a replay: the higher of the accepted and the highest seen.
    public var replayFloor: UInt64? {
        switch (lastAcceptedSerial, highestSeenSerial) {
        case (let accepted?, let seen?): return max(accepted, seen)
        case (let one?, nil), (nil, let one?): return one
        case (nil, nil): return nil
        }
    }
}
