#if canImport(Glibc)
import Glibc
#endif
@testable import SwitchbackCore
import SwitchbackFiles
import Testing

/// Baseline beside canary in `SupervisorMachine` (`analysis.baseline=true`): the old child of
/// a start-first switch keeps serving through the new build's window, and what each verdict,
/// exit and choice does with it. No process, no clock.
extension SupervisorMachineTests {
    /// `first`'s build (pid 100) serves and passed its window; the choice moved to the other
    /// slot and its candidate (pid 200) became ready one second later: the first child stays
    /// as the baseline of the other build's window.
    static func comparing(window: Int = 30, first: BuildSlot = .current) -> (Machine, [Machine.Action]) {
        let build: (BuildSlot) -> String = { $0 == .current ? "cur" : "prev" }
        var machine = machine(listeners: true)
        machine.bakeWindowSeconds = window
        machine.configuration.comparesWithBaseline = true
        _ = machine.handle(.start, at: at(0))
        _ = machine.handle(.spawned(.first, pid: 100, intendedSlot: first, goodBuilds: []), at: at(0))
        _ = machine.handle(.reported(pid: 100, slot: first, build: build(first)), at: at(0))
        _ = machine.handle(.saidReady(pid: 100), at: at(0.1))
        _ = machine.handle(.tick, at: at(0.1))
        _ = machine.handle(.analysisVerdict(.passed("every check passed")), at: at(Double(window + 1)))
        let switchAt = Double(window + 2), other = first.other
        _ = machine.handle(.choiceSelects(other), at: at(switchAt))
        _ = machine.handle(.spawned(.candidate(other), pid: 200, intendedSlot: other, goodBuilds: []), at: at(switchAt))
        _ = machine.handle(.reported(pid: 200, slot: other, build: build(other)), at: at(switchAt))
        _ = machine.handle(.saidReady(pid: 200), at: at(switchAt + 1))
        let actions = machine.handle(.tick, at: at(switchAt + 1))
        return (machine, actions)
    }

    @Test func theOldChildOfAStartFirstSwitchServesBesideTheNewBuildForItsWindow() {
        let (machine, actions) = Self.comparing()
        #expect(machine.baseline?.pid == 100 && machine.serving?.pid == 200)
        #expect(!actions.contains(.drain(pid: 100)), "the baseline keeps accepting")
        #expect(machine.draining.isEmpty)
        let record = machine.probation.record
        #expect(record?.comparison == .beside(baselinePID: 100, canaryPID: 200, slot: .current, version: "1.3.0", build: "cur"))
        #expect(Self.said(actions).contains("the previous slot (pid 200) is ready (it said it was ready); the current slot (pid 100) keeps serving beside it as the baseline of its bake window."))
        #expect(Self.said(actions).contains("the previous build (1.2.0) is on probation for 30 s, compared with the current build (1.3.0, pid 100) serving beside it."))
        #expect(machine.children.map(\.pid).sorted() == [100, 200])
    }

    @Test func aPassedWindowDrainsTheBaseline() {
        var (machine, _) = Self.comparing()
        let actions = machine.handle(.analysisVerdict(.passed("baseline: score 100")), at: Self.at(64))
        #expect(actions.first == .drain(pid: 100))
        #expect(machine.baseline == nil && machine.draining.map(\.pid) == [100])
        #expect(Self.said(actions).contains("the current slot (pid 100), the baseline, is no longer needed (the window passed); stopping it gracefully."))
    }

    @Test func aFailedWindowHandsTheServiceBackToTheBaselineWithoutStartingAnything() {
        var (machine, _) = Self.comparing()
        let verdict = machine.handle(.analysisVerdict(.failed("baseline: score 50")), at: Self.at(40))
        #expect(verdict.contains { if case .markBad(.previous, "prev", _, _) = $0 { return true } else { return false } })
        #expect(verdict.last == .reconsiderChoice, "the choice is read again at once")
        #expect(machine.baseline?.pid == 100, "kept until the choice says where to go")
        // markBad moved the choice back to the current slot: the baseline serves alone.
        let actions = machine.handle(.choiceSelects(.current), at: Self.at(40.1))
        #expect(!actions.contains { if case .spawn = $0 { return true } else { return false } }, "nothing starts: \(actions)")
        #expect(actions.contains(.drain(pid: 200)) && actions.contains(.acknowledgeChoice))
        #expect(machine.serving?.pid == 100 && machine.baseline == nil && machine.draining.map(\.pid) == [200])
        #expect(Self.said(actions).contains("the persisted choice now selects the current slot; the current slot (pid 100), the baseline serving beside the previous slot (pid 200), serves alone and the previous slot (pid 200) stops gracefully."))
    }

    @Test func aFailedWindowWhoseChoiceStaysDrainsTheBaseline() {
        var (machine, _) = Self.comparing()
        _ = machine.handle(.analysisVerdict(.failed("baseline: score 50")), at: Self.at(40))
        // The current build is bad too: the choice stays on the previous slot.
        let actions = machine.handle(.choiceSelects(.previous), at: Self.at(40.1))
        #expect(actions.contains(.drain(pid: 100)) && actions.contains(.acknowledgeChoice))
        #expect(machine.serving?.pid == 200 && machine.baseline == nil)
    }

    @Test func theChoiceOfTheCanarysOwnSlotDuringTheWindowChangesNothing() {
        var (machine, _) = Self.comparing()
        #expect(machine.handle(.choiceSelects(.previous), at: Self.at(36)) == [])
        #expect(machine.baseline?.pid == 100)
    }

    @Test func anOperatorsSwitchBackDuringTheWindowIsTheBaselineTakingOver() {
        var (machine, _) = Self.comparing()
        let actions = machine.handle(.choiceSelects(.current), at: Self.at(36))
        #expect(actions.contains(.stopAnalyzer) && actions.contains(.drain(pid: 200)))
        #expect(machine.serving?.pid == 100)
        #expect(machine.probation.record?.state == .inconclusive)
        #expect(machine.probation.record?.result == "the current slot (pid 100) (1.3.0), its baseline, took over before the window ended")
    }

    @Test func aBaselineThatCrashesIsCountedAndTheWindowGoesOn() {
        var (machine, _) = Self.comparing()
        let actions = machine.handle(.exited(pid: 100, .killed(signal: SIGSEGV)), at: Self.at(36))
        #expect(actions.contains(.countCrash(slot: .current, build: "cur")))
        #expect(!actions.contains(.stopAnalyzer))
        #expect(machine.baseline == nil && machine.serving?.pid == 200)
        #expect(machine.probation.record?.state == .baking)
    }

    @Test func theBaselineStopsWithTheSupervisor() {
        var (machine, _) = Self.comparing()
        let actions = machine.handle(.signal(SIGTERM), at: Self.at(36))
        #expect(actions.contains(.kill(pid: 100, signal: SIGTERM)) && actions.contains(.kill(pid: 200, signal: SIGTERM)))
        #expect(machine.handle(.exited(pid: 200, .exited(0)), at: Self.at(36.1)) == [])
        #expect(machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(36.2)) == [.exit(0)])
    }

    @Test func theFirstStartHasNoBaselineAndSaysWhy() {
        var machine = Self.machine(listeners: true)
        machine.bakeWindowSeconds = 30
        machine.configuration.comparesWithBaseline = true
        _ = machine.handle(.start, at: Self.at(0))
        _ = machine.handle(.spawned(.first, pid: 100, intendedSlot: .current, goodBuilds: []), at: Self.at(0))
        _ = machine.handle(.reported(pid: 100, slot: .current, build: "cur"), at: Self.at(0))
        _ = machine.handle(.saidReady(pid: 100), at: Self.at(0.1))
        let actions = machine.handle(.tick, at: Self.at(0.1))
        #expect(machine.probation.record?.comparison == .none("no other build was serving when it started"))
        #expect(Self.said(actions).contains("the current build (1.3.0) is on probation for 30 s, judged by its absolute checks only: no baseline, because no other build was serving when it started."))
    }

    @Test func withoutComparisonTheOldChildDrainsAsBefore() {
        var (machine, _) = Self.onProbation(window: 30, listeners: true)
        _ = machine.handle(.analysisVerdict(.passed("every check passed")), at: Self.at(31))
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(32))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(32))
        _ = machine.handle(.reported(pid: 200, slot: .previous, build: "prev"), at: Self.at(32))
        _ = machine.handle(.saidReady(pid: 200), at: Self.at(33))
        let actions = machine.handle(.tick, at: Self.at(33))
        #expect(actions.contains(.drain(pid: 100)) && machine.baseline == nil)
        #expect(machine.probation.record?.comparison == nil)
    }

    /// A stop-first switch during the window (a handed-off rollback whose data must be
    /// converted back): the baseline stops too, and the conversion waits for both children.
    @Test func aStopFirstSwitchDuringTheWindowStopsTheBaselineToo() {
        // The previous build (pid 100) serves; the current one (pid 200) is compared beside it.
        var (machine, _) = Self.comparing(first: .previous)
        #expect(machine.baseline?.pid == 100 && machine.serving?.pid == 200)
        let request = SwitchRequest(id: "42-1", source: .cli, reason: "bad", force: false, command: "rollbackctl rollback", fromBuild: "cur")
        let actions = machine.handle(.switchRequested(request, path: .stopFirst(why: "the data must be converted back")), at: Self.at(36))
        #expect(actions.contains(.drain(pid: 100)) && actions.contains(.drain(pid: 200)))
        #expect(machine.baseline == nil && Set(machine.draining.map(\.pid)) == [100, 200])
        #expect(machine.handle(.exited(pid: 200, .exited(0)), at: Self.at(36.5)) == [], "the conversion waits for the baseline")
        #expect(machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(36.6)).contains(.convert(request)))
    }
}
