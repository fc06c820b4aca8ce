#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One transition in a scope's version history: the first launch, or a launch whose version or build differed from the one before.
///
/// Launches that change nothing add no event, so the history stays small however
/// often the app starts.
public struct HistoryEvent: Sendable, Equatable {
    /// What kind of transition this was.
    public enum Kind: String, Sendable, CaseIterable {
        /// The first launch recorded in this scope.
        case installed
        /// The version has a higher precedence than the one before.
        case upgraded
        /// The version has a lower precedence than the one before (a rollback, for example).
        case downgraded
        /// The same version with a different build (or different build metadata).
        case updated
    }

    /// What kind of transition this was.
    public var kind: Kind
    /// The version and build that started running.
    public var running: RunningVersion
    /// When the transition was recorded.
    public var date: Date
    /// The slot that ran, such as `"current"` or `"previous"`, as the caller named it; `nil` if not given.
    public var slot: String?
    /// The operating system at the time, if it could be read.
    public var system: SystemVersion?

    /// Creates an event; ``VersionTracker`` makes these for you.
    public init(kind: Kind, running: RunningVersion, date: Date, slot: String? = nil, system: SystemVersion? = nil) {
        self.kind = kind
        self.running = running
        self.date = date
        self.slot = slot
        self.system = system
    }
}
