/// What a start does before it checks and loads a slot: a pure function of the persisted
/// choice, the health verdicts and the manifest, so that the launcher, the supervisor and
/// `rollbackctl status` agree on "which build runs, and why" without touching a disk.
///
/// In order:
/// 1. `SlotDecision.decide`: the forced slot, the persisted flag, a damaged state.
/// 2. A rollback whose build-it-moved-away-from is no longer the current build was
///    superseded by a new release: the current slot runs (on trial, as every new build).
/// 3. `HealthPolicy.choose`: automatic rollback, which never overrides an explicit choice.
public struct StartPlan: Sendable {
    /// The slot to run and why.
    public var decision: SlotDecision
    /// The verdicts and what to write because of them.
    public var health: HealthChoice
    /// The rollback a new release superseded; the launcher records it (`StateStore.recordSupersedingRelease`).
    public var superseded: PersistedState?

    /// Plans a start. Throws `.invalidArgument` for a bad `SWITCHBACK_SLOT`.
    public static func make(state: LoadedState, health record: HealthRecord, manifest: Manifest,
                            forcedSlot: String?, applyHealth: Bool = true) throws(SwitchbackError) -> StartPlan {
        var decision = try SlotDecision.decide(state: state, forcedSlot: forcedSlot)
        var superseded: PersistedState?
        if !decision.isForced, state.problem == nil, let rollback = supersededRollback(state.state, manifest: manifest) {
            superseded = rollback
            decision = SlotDecision(slot: .current, reason: .supersededByRelease(rollback, current: BuildIdentity(manifest, .current)))
        }
        var choice = HealthChoice(decision: decision)
        if applyHealth && !decision.isForced {
            choice = HealthPolicy.choose(decision, current: record.health(of: .current, in: manifest),
                                         previous: record.health(of: .previous, in: manifest),
                                         versions: { manifest[$0].version }, sameBuild: manifest.isFirstRelease)
        }
        return StartPlan(decision: choice.decision, health: choice, superseded: superseded)
    }

    /// The rollback in `state` if a new release superseded it: the flag says "previous", it
    /// recorded the build it moved away from, and the bundle's current build is another one.
    /// A state without builds (format 1) is never superseded: it cannot tell.
    public static func supersededRollback(_ state: PersistedState, manifest: Manifest) -> PersistedState? {
        guard state.rollback, let from = state.fromBuild, from.sha256 != manifest.current.sha256 else { return nil }
        return state
    }

    /// The reason recorded for a superseded rollback, naming both builds.
    public static func supersessionReason(_ rollback: PersistedState, current: BuildIdentity) -> String {
        let from = rollback.fromBuild?.description ?? "another build"
        let by: String
        switch rollback.source {
        case .cli: by = "an operator's rollback"
        case .remote: by = "a remote directive's rollback"
        case .auto: by = "the automatic rollback"
        case .default: by = "the rollback"
        }
        let when = rollback.changedAt.map { " of \(formatUTC($0))" } ?? ""
        return "release \(current.description) superseded \(by)\(when) from \(from)"
    }
}
