/// How this launch's version compares with the previous launch recorded in the same scope.
///
/// ```swift
/// switch launch.changeState {
/// case .installed: showIntro()
/// case .notChanged: break
/// case .updated(let from): log("new build of \(from.version)")
/// case .upgraded(let from): showWhatsNew(since: from.version)
/// case .downgraded(let from): log("rolled back from \(from)")
/// }
/// ```
public enum ChangeState: Sendable, Hashable {
    /// No earlier launch is recorded in this scope.
    case installed
    /// Same version and build as the previous launch.
    case notChanged
    /// Same version precedence, different build (or build metadata).
    case updated(from: RunningVersion)
    /// A version of higher precedence than the previous launch.
    case upgraded(from: RunningVersion)
    /// A version of lower precedence than the previous launch.
    case downgraded(from: RunningVersion)

    /// The version that ran before, if this launch changed it.
    public var previous: RunningVersion? {
        switch self {
        case .installed, .notChanged: return nil
        case .updated(let from), .upgraded(let from), .downgraded(let from): return from
        }
    }

    /// The state for going from `previous` (nil on a first launch) to `running`.
    static func between(_ previous: RunningVersion?, and running: RunningVersion) -> ChangeState {
        guard let previous else { return .installed }
        if running.version < previous.version { return .downgraded(from: previous) }
        if previous.version < running.version { return .upgraded(from: previous) }
        if running.isIdentical(to: previous) { return .notChanged }
        return .updated(from: previous)
    }

    /// The history event kind for this change, or nil when nothing changed.
    var eventKind: HistoryEvent.Kind? {
        switch self {
        case .installed: return .installed
        case .notChanged: return nil
        case .updated: return .updated
        case .upgraded: return .upgraded
        case .downgraded: return .downgraded
        }
    }
}
