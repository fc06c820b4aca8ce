/// What `StateStore.load` found.
public struct LoadedState: Sendable, Equatable {
    /// The state to act on: the file's, or, when the file is damaged, the choice recovered
    /// from the history (or the default when the history has none).
    public var state: PersistedState
    /// Why the file could not be used as it is, if it could not.
    public var problem: SwitchbackError?
    /// True when `state` was recovered from the history's last switch.
    public var recoveredFromHistory: Bool
    /// True when there was no state file: the normal first start.
    public var isFirstStart: Bool
    /// When the state is not trusted (`isUntrusted`): the rejection of the current build it
    /// records, as a clause ("an operator rolled back with rollbackctl on ..."), which a start
    /// honours by running the previous build; nil when it records none (see `StartState`).
    public var untrustedRejection: String?

    public init(state: PersistedState, problem: SwitchbackError? = nil, recoveredFromHistory: Bool = false, isFirstStart: Bool = false,
                untrustedRejection: String? = nil) {
        self.state = state
        self.problem = problem
        self.recoveredFromHistory = recoveredFromHistory
        self.isFirstStart = isFirstStart
        self.untrustedRejection = untrustedRejection
    }

    /// True when the state directory or a file that decides a start failed the strict checks
    /// (`problem` is `.insecurePermissions`): nothing in it is written, and only a rejection it
    /// records counts.
    public var isUntrusted: Bool { problem?.code == .insecurePermissions }

    /// One sentence for a damaged or untrusted state: what was found and what is assumed.
    public var problemSentence: String? {
        guard let problem else { return nil }
        let found = problem.clause
        if problem.code == .insecurePermissions {
            guard let untrustedRejection else { return "\(found); ignoring it and running the current slot." }
            return "\(found); it records that \(untrustedRejection), so the previous slot runs, and nothing is written there until it is trusted again."
        }
        let assumed = recoveredFromHistory
            ? "assuming the last choice in the history (\(state.slot.rawValue), set by \(state.source.rawValue))"
            : "assuming the default (current)"
        return "\(found); \(assumed); run 'rollbackctl rollback' or 'rollbackctl rollforward' to write a fresh one."
    }
}

/// Reads and writes the rollback flag in a state directory.
public struct StateStore: Sendable {
    public let directory: StateDirectory

    public init(directory: StateDirectory) { self.directory = directory }

    /// Loads the flag. Never throws: a missing file is the first start; an unreadable,
    /// empty, truncated, garbage or too-new file yields the last switch recorded in the
    /// history (or the default) together with the problem, so nothing is lost silently.
    public func load() -> LoadedState {
        let path = directory.statePath
        do {
            guard let bytes = try FileSystem.read(path, limit: 64 << 10) else {
                return LoadedState(state: .initial, isFirstStart: true)
            }
            return LoadedState(state: try PersistedState.parse(bytes, path: path))
        } catch {
            // A state file another user could write means the directory is not ours alone:
            // like an untrusted directory, nothing in it decides (the current slot runs).
            if error.code == .insecurePermissions { return LoadedState(state: .initial, problem: error) }
            if let last = try? HistoryLog(path: directory.historyPath).read().events.last(where: { $0.kind == .switch }) {
                let state = PersistedState(rollback: last.to == .previous, source: last.source, reason: last.reason, changedAt: last.time)
                return LoadedState(state: state, problem: error, recoveredFromHistory: true)
            }
            return LoadedState(state: .initial, problem: error)
        }
    }

    /// Writes the flag atomically and durably. The caller holds the directory's lock.
    public func save(_ state: PersistedState) throws(SwitchbackError) {
        try FileSystem.replace(directory.statePath, with: state.serialized())
    }
}
