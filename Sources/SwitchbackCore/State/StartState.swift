/// What a start reads from the state directory before it decides — the rollback flag and the
/// health verdicts — and whether it may trust them. The launcher and `rollbackctl status`
/// both read it here, so that they agree.
///
/// The state is trusted when the state directory (with every directory above it), the state
/// file and the health file pass the strict checks (`StrictModes`). When one does not (a
/// directory others can write, a Kubernetes volume chgrp'ed to a shared group), a start
/// writes nothing there, and reads the two files once more without trusting them
/// (`FileSystem.readUntrusted`, the same parsers) for one question: does the state record a
/// rejection of the current build — a rollback that no newer release superseded, or a bad
/// verdict on the current build? If so the previous build runs: a rejection is never
/// silently undone by a change of modes. The most such a file can do is pick the previous
/// build, which the manifest verifies like any slot; it cannot pick the current one.
public struct StartState: Sendable {
    /// The choice to decide on; for an untrusted state, its `problem` says why and its
    /// `untrustedRejection` what it records (`LoadedState.isUntrusted`).
    public var loaded: LoadedState
    /// The verdicts: empty when the state is not trusted or the health file is damaged.
    public var health: HealthRecord
    /// Why the health file could not be used, when the state is trusted but the file damaged.
    public var healthProblem: SwitchbackError?
    /// Why the state is not trusted (the first of the directory, the state file and the health
    /// file that failed); nil when it is.
    public var trustProblem: SwitchbackError?

    /// True when a start may act on the state and write to it.
    public var isTrusted: Bool { trustProblem == nil }

    /// Reads the state as a start does. `directoryProblem` is what `StateDirectory.checkPermissions`
    /// threw, if anything: the caller checks the directory first, because only a trusted one
    /// gets the remote check and the journal's recovery before this read.
    public static func load(directory: StateDirectory, directoryProblem: SwitchbackError?, manifest: Manifest) -> StartState {
        if let directoryProblem {
            // A directory that cannot even be inspected (EACCES on the way) records nothing readable.
            let loaded = directoryProblem.code == .insecurePermissions
                ? untrusted(directory, problem: directoryProblem, manifest: manifest)
                : LoadedState(state: .initial, problem: directoryProblem)
            return StartState(loaded: loaded, health: HealthRecord(), trustProblem: directoryProblem)
        }
        let loaded = StateStore(directory: directory).load()
        if let problem = loaded.problem, problem.code == .insecurePermissions {
            return StartState(loaded: untrusted(directory, problem: problem, manifest: manifest), health: HealthRecord(), trustProblem: problem)
        }
        let (record, healthProblem) = HealthStore(directory: directory).load()
        if let problem = healthProblem, problem.code == .insecurePermissions {
            return StartState(loaded: untrusted(directory, problem: problem, manifest: manifest), health: HealthRecord(), trustProblem: problem)
        }
        return StartState(loaded: loaded, health: record, healthProblem: healthProblem, trustProblem: nil)
    }

    /// The untrusted state, read without trusting it: what it records against the current
    /// build, or nothing (the default) when it records nothing or cannot be read.
    static func untrusted(_ directory: StateDirectory, problem: SwitchbackError, manifest: Manifest) -> LoadedState {
        let state = FileSystem.readUntrusted("state", in: directory.path).flatMap { try? PersistedState.parse($0, path: directory.statePath) }
        let health = FileSystem.readUntrusted("health", in: directory.path).flatMap { try? HealthRecord.parse($0, path: directory.path + "/health") }
        guard let (recorded, rejection) = recordedRejection(state: state, health: health, manifest: manifest) else {
            return LoadedState(state: .initial, problem: problem)
        }
        return LoadedState(state: recorded, problem: problem, untrustedRejection: rejection)
    }

    /// The rejection of `manifest`'s current build that an untrusted state records, with the
    /// choice to show for it and a clause that says what it is; nil when it records none. A
    /// rollback counts unless a newer release superseded it (it moved away from another build
    /// than the current one: `StartPlan.supersededRollback`); a bad verdict counts when it is
    /// on the current build.
    static func recordedRejection(state: PersistedState?, health: HealthRecord?, manifest: Manifest) -> (PersistedState, String)? {
        if let state, state.rollback, StartPlan.supersededRollback(state, manifest: manifest) == nil {
            return (state, SlotDecision.explain(state))
        }
        if let current = health?.health(of: .current, in: manifest), current.isBad {
            return (.initial, "the current build (\(manifest.current.version)) is \(current.summary)")
        }
        return nil
    }
}
