import Testing
@testable import SwitchbackCore

/// Automatic rollback's pure part, without a disk or a process.
@Suite struct HealthPolicyTests {
    let versions: (BuildSlot) -> String = { $0 == .current ? "2.0.0" : "1.0.0" }
    let flagCurrent = SlotDecision(slot: .current, reason: .firstStart)

    func trial(_ tries: Int, failed: Int = 0) -> SlotHealth {
        SlotHealth(build: "b", verdict: .trial(triesLeft: tries), failedStarts: failed)
    }

    @Test func aBuildWithTriesLeftRuns() {
        let choice = HealthPolicy.choose(flagCurrent, current: trial(1, failed: 2), previous: trial(3), versions: versions)
        #expect(choice.decision == flagCurrent)
        #expect(choice.markBad == nil && choice.switchFlag == nil && choice.message == nil)
    }

    @Test func aBuildOutOfTriesIsMarkedBadAndTheFlagFollowsTheOtherSlot() {
        let choice = HealthPolicy.choose(flagCurrent, current: trial(0, failed: 3), previous: trial(3), versions: versions)
        #expect(choice.decision.slot == .previous)
        #expect(choice.markBad == .current)
        #expect(choice.switchFlag?.slot == .previous)
        #expect(choice.switchFlag?.reason == "the current build (2.0.0) failed 3 starts without being marked good")
        #expect(choice.message == "The current build (2.0.0) failed 3 starts without being marked good; running the previous slot (1.0.0) instead.")
    }

    @Test func whenBothAreBadTheOneMarkedGoodMostRecentlyRuns() {
        var current = SlotHealth(build: "c", verdict: .bad, lastGoodAt: 100)
        var previous = SlotHealth(build: "p", verdict: .bad, lastGoodAt: 200)
        var choice = HealthPolicy.choose(flagCurrent, current: current, previous: previous, versions: versions)
        #expect(choice.decision == SlotDecision(slot: .previous, reason: .bothBad))
        #expect(choice.switchFlag == nil)
        #expect(choice.message?.hasPrefix("WARNING: both builds are bad") == true)
        current.lastGoodAt = 300
        choice = HealthPolicy.choose(flagCurrent, current: current, previous: previous, versions: versions)
        #expect(choice.decision.slot == .current)
        current.lastGoodAt = nil
        previous.lastGoodAt = nil
        choice = HealthPolicy.choose(flagCurrent, current: current, previous: previous, versions: versions)
        #expect(choice.decision.slot == .current, "neither ever started well: the flag's choice runs")
        #expect(choice.message?.contains("neither ever started well") == true)
    }

    @Test func aForcedRunIsLeftAlone() {
        let forced = SlotDecision(slot: .current, reason: .forcedByEnvironment)
        let choice = HealthPolicy.choose(forced, current: SlotHealth(build: "c", verdict: .bad), previous: trial(3), versions: versions)
        #expect(choice.decision == forced)
        #expect(choice.markBad == nil && choice.message == nil)
    }
}
