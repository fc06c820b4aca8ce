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

    /// Why, as the end of a sentence ("because ...").
    public var explanation: String {
        switch reason {
        case .firstStart:
            return "nobody has rolled back this install (there is no state file yet)"
        case .persisted(let state):
            return Self.explain(state)
        case .damagedState(let loaded):
            return loaded.problemSentence.map { Self.clause(String($0.dropLast())) } ?? "the state file is damaged"
        case .untrustedState(let loaded):
            let found = loaded.problem.map { Self.clause($0.clause) } ?? "it failed the strict checks"
            guard let rejection = loaded.untrustedRejection else { return "the state is not trusted and records no rollback: \(found)" }
            return "\(rejection), which is honoured although the state is not trusted: \(found)"
        case .forcedByEnvironment:
            return "SWITCHBACK_SLOT=\(slot.rawValue) forces it for this run"
        case .fallback(let failed, let failure):
            return "the \(failed.rawValue) slot cannot run (\(Self.clause(failure.hasSuffix(".") ? String(failure.dropLast()) : failure)))"
        case .markedBad(let failed, let why):
            return "the \(failed.rawValue) build \(why)"
        case .bothBad:
            return "both builds are bad and this one started well most recently"
        case .keptByExplicitChoice(let failed, let why, let rejected):
            return "it was chosen explicitly: the \(failed.rawValue) build \(why), but automatic rollback does not switch to the \(failed.other.rawValue) build, which \(rejected)"
        case .noOtherBuild(_, let why):
            return "the build \(why), but both slots hold it (a first release), so there is no other build to switch to"
        case .supersededByRelease(let rollback, let current):
            return StartPlan.supersessionReason(rollback, current: current)
        }
    }

    /// A sentence made the end of another ("because the state file ..."): its first word in
    /// lower case when it is a capitalised word ("The", "Reading"), not a name ("HOME").
    static func clause(_ sentence: String) -> String {
        let bytes = Array(sentence.utf8.prefix(2))
        guard bytes.count == 2, (0x41...0x5A).contains(bytes[0]), (0x61...0x7A).contains(bytes[1]) else { return sentence }
        return String(decoding: [bytes[0] + 0x20], as: UTF8.self) + String(Substring(sentence.utf8.dropFirst()))
    }

    static func explain(_ state: PersistedState) -> String {
        let when = state.changedAt.map { " on \(formatUTC($0))" } ?? ""
        let why = state.reason.map { ": \"\($0)\"" } ?? ""
        let verb = state.rollback ? "rolled back" : "rolled forward"
        switch state.source {
        case .default:
            // A superseding release records its reason; the plain default has none.
            return state.reason.map { "\($0)\(when)" } ?? "nobody has rolled back this install"
        case .cli:
            return "an operator \(verb) with rollbackctl\(when)\(why)"
        case .remote:
            return "a signed remote directive \(verb)\(when)\(why)"
        case .auto:
            return "automatic rollback \(verb)\(when)\(why)"
        }
    }
}
