/// Which slot the next start runs, and why. Made by `SlotDecision.decide`, a pure
/// function of the loaded state and the environment, so it is testable without a disk.
public struct SlotDecision: Sendable, Equatable {
    /// Why a slot was chosen.
    public enum Reason: Sendable, Equatable {
        /// No state file: nobody has switched this install yet.
        case firstStart
        /// The persisted flag selects it.
        case persisted(PersistedState)
        /// The state file is damaged; the choice was recovered or defaulted (see LoadedState).
        case damagedState(LoadedState)
        /// The state is not trusted (see `StartState`): the previous slot when it records a
        /// rejection of the current build, else the current one.
        case untrustedState(LoadedState)
        /// `SWITCHBACK_SLOT` forces it for this run.
        case forcedByEnvironment
        /// The chosen slot could not run; this one runs instead.
        case fallback(failed: BuildSlot, failure: String)
        /// The chosen slot's build is bad (automatic rollback); this one runs instead.
        case markedBad(failed: BuildSlot, why: String)
        /// Both builds are bad; this one started well most recently.
        case bothBad
        /// The chosen build keeps failing, but the other one was rejected by an operator or a
        /// directive: automatic rollback does not override that choice.
        case keptByExplicitChoice(failed: BuildSlot, why: String, rejected: String)
        /// The build failed, but both slots hold it (a first release): there is no other build.
        case noOtherBuild(failed: BuildSlot, why: String)
        /// A new release superseded the persisted rollback: its current build runs.
        case supersededByRelease(PersistedState, current: BuildIdentity)
        /// The chosen build failed and automatic rollback asked to switch, but the switch was
        /// refused (the data could not be converted back): the failing build stays.
        case switchRefused(failed: BuildSlot, why: String, refusal: String)
        /// The supervisor's running child keeps running: the choice still selects it, or only
        /// its tries ran out (the next start decides on them, not a replacement).
        case keptRunning
        /// The previous build cannot read the data and it could not be converted back: the
        /// current build runs instead (`problem` says why).
        case dataNotConvertible(problem: String)
    }

    /// The slot to run.
    public var slot: BuildSlot
    /// Why.
    public var reason: Reason

    public init(slot: BuildSlot, reason: Reason) {
        self.slot = slot
        self.reason = reason
    }

    /// True when `SWITCHBACK_SLOT` chose the slot; such a run never falls back.
    public var isForced: Bool { reason == .forcedByEnvironment }

    /// Decides from the loaded state and the value of `SWITCHBACK_SLOT`, if set. Throws
    /// `.invalidArgument` for a value other than "current" or "previous".
    public static func decide(state: LoadedState, forcedSlot: String?) throws(SwitchbackError) -> SlotDecision {
        if let forcedSlot, !forcedSlot.isEmpty {
            guard let slot = BuildSlot(rawValue: forcedSlot) else {
                throw SwitchbackError(.invalidArgument, "SWITCHBACK_SLOT must be 'current' or 'previous', not '\(forcedSlot)'; unset it to use the persisted choice.")
            }
            return SlotDecision(slot: slot, reason: .forcedByEnvironment)
        }
        if state.isUntrusted {
            return SlotDecision(slot: state.untrustedRejection == nil ? .current : .previous, reason: .untrustedState(state))
        }
        if state.problem != nil { return SlotDecision(slot: state.state.slot, reason: .damagedState(state)) }
        if state.isFirstStart { return SlotDecision(slot: .current, reason: .firstStart) }
        return SlotDecision(slot: state.state.slot, reason: .persisted(state.state))
    }

    /// The decision after `slot` failed its checks with `failure`: run the other slot.
    public func fallingBack(failure: String) -> SlotDecision {
        SlotDecision(slot: slot.other, reason: .fallback(failed: slot, failure: failure))
    }
}
