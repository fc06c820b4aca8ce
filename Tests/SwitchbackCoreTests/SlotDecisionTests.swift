import Testing
@testable import SwitchbackCore

@Suite struct SlotDecisionTests {
    let rolledBack = PersistedState(rollback: true, source: .cli, reason: "bad release", changedAt: 1_800_000_000)

    @Test func firstStartRunsCurrent() throws {
        let decision = try SlotDecision.decide(state: LoadedState(state: .initial, isFirstStart: true), forcedSlot: nil)
        #expect(decision.slot == .current)
        #expect(decision.reason == .firstStart)
        #expect(decision.explanation.contains("no state file yet"))
    }

    @Test func persistedRollbackRunsPrevious() throws {
        let decision = try SlotDecision.decide(state: LoadedState(state: rolledBack), forcedSlot: nil)
        #expect(decision.slot == .previous)
        #expect(decision.explanation == "an operator rolled back with rollbackctl on 2027-01-15 08:00:00 UTC: \"bad release\"")
    }

    @Test func rollforwardRunsCurrent() throws {
        var state = rolledBack
        state.rollback = false
        state.source = .remote
        state.reason = nil
        let decision = try SlotDecision.decide(state: LoadedState(state: state), forcedSlot: nil)
        #expect(decision.slot == .current)
        #expect(decision.explanation.hasPrefix("a signed remote directive rolled forward"))
    }

    @Test func environmentForcesASlotAndNeverFallsBack() throws {
        let decision = try SlotDecision.decide(state: LoadedState(state: rolledBack), forcedSlot: "current")
        #expect(decision.slot == .current)
        #expect(decision.isForced)
        #expect(decision.explanation == "SWITCHBACK_SLOT=current forces it for this run")
    }

    @Test func emptyEnvironmentValueIsIgnored() throws {
        let decision = try SlotDecision.decide(state: LoadedState(state: rolledBack), forcedSlot: "")
        #expect(decision.slot == .previous)
    }

    @Test func invalidForcedSlotIsAnError() {
        #expect {
            try SlotDecision.decide(state: LoadedState(state: .initial), forcedSlot: "older")
        } throws: { error in
            (error as? SwitchbackError)?.code == .invalidArgument
                && (error as? SwitchbackError)?.message.contains("'current' or 'previous', not 'older'") == true
        }
    }

    @Test func damagedStateUsesTheRecoveredChoiceAndSaysSo() throws {
        let problem = SwitchbackError(.stateInvalid, "The state file /s/state is empty.")
        let loaded = LoadedState(state: rolledBack, problem: problem, recoveredFromHistory: true)
        let decision = try SlotDecision.decide(state: loaded, forcedSlot: nil)
        #expect(decision.slot == .previous)
        // The end of "because ...": its first word in lower case.
        #expect(decision.explanation.hasPrefix("the state file /s/state is empty; assuming the last choice in the history (previous, set by cli)"))
    }

    @Test func fallbackRunsTheOtherSlotAndNamesTheFailure() throws {
        let decision = try SlotDecision.decide(state: LoadedState(state: rolledBack), forcedSlot: nil)
            .fallingBack(failure: "The previous slot at /b is truncated: 1 of 2 bytes.")
        #expect(decision.slot == .current)
        #expect(decision.explanation == "the previous slot cannot run (the previous slot at /b is truncated: 1 of 2 bytes)")
    }
}
