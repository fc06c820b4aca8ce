/// Plans a start: a pure function from everything a start knows to a `LaunchPlan`. The
/// launcher executes the plan, `rollbackctl status` shows it (its "next start runs" is the
/// plan's slot, made by this same code from the same inputs), and the supervisor asks it with
/// its running child as one more input.
///
/// In order:
/// 1. `StartPlan.make`: the forced slot, the persisted choice (damaged or untrusted), a
///    superseding release, and — when the start counts tries — the verdicts (automatic rollback).
/// 2. The supervisor's running child keeps running unless its build was marked bad.
/// 3. A re-executed start (the slot failed after mapping) falls back to the other slot.
/// 4. The slot checks (`slotProblem`): a chosen slot that cannot run falls back to the other
///    one; a forced slot never falls back; neither slot running refuses the start.
/// 5. The data: the previous build runs only on data it can read. Converting it back needs the
///    current build loadable and a trusted state directory; otherwise the current build runs
///    instead, or, for a fallback or a forced previous slot, the start is refused.
///
/// The planner does no I/O itself. Two of its inputs are asked lazily (`slotProblem`,
/// `dataFloor`), so a start checks only the slots and reads the data state only when the
/// plan needs them: a plain start verifies one slot and never reads `data-state`.
public struct LaunchPlanner {
    /// The bundle's manifest.
    public var manifest: Manifest
    /// The persisted choice, with its problem (damaged, untrusted).
    public var state: LoadedState
    /// Whether the state may be acted on and written (`StartState.isTrusted`).
    public var isTrusted: Bool
    /// The verdicts (empty when not trusted).
    public var health: HealthRecord
    /// Why the health file could not be used, when trusted but damaged.
    public var healthProblem: SwitchbackError?
    /// `SWITCHBACK_SLOT`, as set (an invalid value is a usage error).
    public var forcedSlot: String?
    /// A start re-executed after `slot` failed once mapped (`SWITCHBACK_LAUNCH_FAILED`).
    public var earlierFailure: (slot: BuildSlot, message: String)?
    /// The supervisor's running child, when the supervisor asks.
    public var running: BuildSlot?
    /// Whether slot checks and the data decide (a start, `status`); the supervisor leaves
    /// them to its child's own plan.
    public var checksSlots: Bool
    /// Why a slot cannot run (its checks before mapping), nil when it can. Asked lazily.
    public var slotProblem: (BuildSlot) -> String?
    /// The reader floor the current build published when it is above the previous build's
    /// version (the data must be converted back before the previous build runs), else nil.
    /// Asked lazily, only when the previous slot would run.
    public var dataFloor: () -> String?
    /// Why the data cannot be converted back for the previous build, as far as can be known
    /// without converting it (a whole sentence), nil when it can or nothing says. The launcher
    /// converts and learns (`afterRefusedConversion`); a reader at rest (`InstallOnDisk`:
    /// status, the metrics) asks the plan the current build published. Asked lazily.
    public var conversionRefusal: () -> String?

    public init(manifest: Manifest, state: LoadedState, isTrusted: Bool, health: HealthRecord,
                healthProblem: SwitchbackError? = nil, forcedSlot: String?,
                earlierFailure: (slot: BuildSlot, message: String)? = nil, running: BuildSlot? = nil,
                checksSlots: Bool = true, slotProblem: @escaping (BuildSlot) -> String? = { _ in nil },
                dataFloor: @escaping () -> String? = { nil }, conversionRefusal: @escaping () -> String? = { nil }) {
        self.manifest = manifest
        self.state = state
        self.isTrusted = isTrusted
        self.health = health
        self.healthProblem = healthProblem
        self.forcedSlot = forcedSlot
        self.earlierFailure = earlierFailure
        self.running = running
        self.checksSlots = checksSlots
        self.slotProblem = slotProblem
        self.dataFloor = dataFloor
        self.conversionRefusal = conversionRefusal
    }

    /// Plans the start. Throws `.invalidArgument` for a bad `SWITCHBACK_SLOT` (exit 64).
    public func plan() throws(SwitchbackError) -> LaunchPlan {
        let forced = !(forcedSlot ?? "").isEmpty
        let countsTry = isTrusted && earlierFailure == nil && !forced && running == nil
        let start = try StartPlan.make(state: state, health: countsTry || running != nil ? health : HealthRecord(),
                                       manifest: manifest, forcedSlot: forcedSlot, applyHealth: countsTry || running != nil)
        var plan = LaunchPlan(decision: start.decision, refusal: nil, health: countsTry ? start.health : nil,
                              superseded: countsTry ? start.superseded : nil, countsTry: countsTry, convertsData: false,
                              healthProblem: countsTry ? healthProblem : nil)
        if countsTry, let message = start.health.message { plan.notes.append(.health(message)) }
        if let running {
            // Using its last try is not a reason to replace the running build: the next start is.
            let chosen = try StartPlan.make(state: state, health: health, manifest: manifest, forcedSlot: forcedSlot,
                                            applyHealth: false).decision
            if chosen.slot == running, !health.health(of: running, in: manifest).isBad {
                plan.decision = SlotDecision(slot: running, reason: chosen.isForced ? chosen.reason : .keptRunning)
            }
        }
        guard checksSlots else { return plan }
        if let earlierFailure, !plan.isForced {
            plan.decision = SlotDecision(slot: earlierFailure.slot, reason: plan.decision.reason)
                .fallingBack(failure: earlierFailure.message)
        }
        if let refusal = predictedSwitchRefusal(plan) { return afterRefusedSwitch(plan, refusal: refusal) }
        return checked(plan)
    }

    /// Why automatic rollback's switch to the previous build will be refused, when the slot
    /// checks already say so (`Switcher.perform`): the previous slot cannot run, or the
    /// current build, which converts its data back first, cannot be loaded.
    func predictedSwitchRefusal(_ plan: LaunchPlan) -> String? {
        guard let (slot, _) = plan.health?.switchFlag, slot == .previous else { return nil }
        if let problem = slotProblem(.previous) {
            return "\(problem) Nothing was converted and the flag is unchanged: a rollback needs a previous build that can run."
        }
        if let problem = slotProblem(.current) { return LaunchPlan.conversionUnavailable(manifest: manifest, message: problem) }
        return nil
    }

    /// Step 4 and 5: the slot checks, then the data.
    func checked(_ planned: LaunchPlan) -> LaunchPlan {
        var plan = planned
        if let problem = slotProblem(plan.decision.slot) {
            if plan.isForced {
                plan.refusal = .forcedSlotBroken(slot: plan.decision.slot, failure: problem)
                return plan
            }
            if let (_, first) = plan.fallback {
                plan.refusal = .noSlotRuns(first: first, then: problem)
                return plan
            }
            plan.decision = plan.decision.fallingBack(failure: problem)
            if let second = slotProblem(plan.decision.slot) {
                plan.refusal = .noSlotRuns(first: problem, then: second)
                return plan
            }
        }
        return planData(plan)
    }

    /// Step 5: the previous build never starts on data it cannot read.
    func planData(_ planned: LaunchPlan) -> LaunchPlan {
        var plan = planned
        guard plan.decision.slot == .previous, let floor = dataFloor() else { return plan }
        if !isTrusted {
            // Converting would write where nothing is written; a forced run is left alone. An
            // untrusted state never stops every start: the current build, which the data is
            // in, runs instead (`afterRefusedConversion`).
            if plan.isForced { return plan }
            return afterRefusedConversion(plan, problem: LaunchPlan.untrustedConversion(state: state, floor: floor, previousVersion: manifest.previous.version))
        }
        // The current build converts its own data back, in a process of its own: it must load.
        if let broken = slotProblem(.current) {
            return afterRefusedConversion(plan, problem: LaunchPlan.conversionUnavailable(manifest: manifest, message: broken))
        }
        if let refused = conversionRefusal() { return afterRefusedConversion(plan, problem: refused) }
        plan.convertsData = true
        return plan
    }

    /// The plan once the data could not be converted back for the previous build (`problem`,
    /// a whole sentence): a forced previous slot or a fallback stops there; otherwise the
    /// current slot runs instead, if it can.
    public func afterRefusedConversion(_ planned: LaunchPlan, problem: String) -> LaunchPlan {
        var plan = planned
        plan.convertsData = false
        if plan.isForced {
            plan.refusal = .forcedPreviousCannotReadData(problem: problem)
        } else if let (_, failure) = plan.fallback {
            plan.refusal = .fallbackCannotReadData(failure: failure, previousVersion: manifest.previous.version, problem: problem)
        } else {
            plan.decision = SlotDecision(slot: .current, reason: .dataNotConvertible(problem: problem))
            plan.notes.append(.dataNotConvertible(problem: problem))
            if let failure = slotProblem(.current) { plan.refusal = .currentCannotRunInstead(failure: failure) }
        }
        return plan
    }

    /// The plan once automatic rollback's switch of the flag was refused (`refusal`, a whole
    /// sentence): the failing build stays (checked like any choice), and the flag is not
    /// switched again by this start.
    public func afterRefusedSwitch(_ planned: LaunchPlan, refusal: String) -> LaunchPlan {
        var plan = planned
        guard let (slot, _) = plan.health?.switchFlag else { return plan }
        let stays = slot.other
        var why = ""
        if case .markedBad(_, let text) = plan.decision.reason { why = text }
        plan.decision = SlotDecision(slot: stays, reason: .switchRefused(failed: stays, why: why, refusal: refusal))
        plan.health?.decision = plan.decision
        plan.health?.switchFlag = nil
        plan.health?.message = nil
        plan.notes.removeAll { if case .health = $0 { return true } else { return false } }
        plan.notes.append(.switchRefused(failed: stays, why: why, refusal: refusal))
        plan.convertsData = false
        plan.refusal = nil
        return checked(plan)
    }
}
