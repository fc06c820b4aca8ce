/// What ``VersionTracker/record(_:slot:)`` learned about this launch.
///
/// ```swift
/// let launch = try tracker.record(running, slot: "current")
/// if launch.isFirstInstall { showIntro() }
/// if case .upgraded(let from) = launch.changeState { showWhatsNew(since: from.version) }
/// ```
public struct Launch: Sendable, Equatable {
    /// The version and build running now.
    public var running: RunningVersion
    /// The slot running now, as the caller named it.
    public var slot: String?
    /// How this launch differs from the previous one recorded in the scope.
    public var changeState: ChangeState
    /// The scope's history, including this launch's event if it added one.
    public var history: VersionHistory

    /// Creates a launch record; ``VersionTracker`` makes these for you.
    public init(running: RunningVersion, slot: String?, changeState: ChangeState, history: VersionHistory) {
        self.running = running
        self.slot = slot
        self.changeState = changeState
        self.history = history
    }

    /// Whether this is the first launch recorded in the scope.
    public var isFirstInstall: Bool { changeState == .installed }

    /// The version that ran before this launch: the same as ``running`` when nothing
    /// changed, nil on a first install.
    public var previous: RunningVersion? {
        switch changeState {
        case .installed: return nil
        case .notChanged: return history.latest
        case .updated(let from), .upgraded(let from), .downgraded(let from): return from
        }
    }

    /// The version recorded first in this scope (this one, on a first install).
    public var firstInstalled: RunningVersion? { history.firstInstalled }
}
