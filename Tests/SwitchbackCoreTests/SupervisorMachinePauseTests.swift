#if canImport(Glibc)
import Glibc
#endif
@testable import SwitchbackCore
import Testing

/// The stop-first switch (`SupervisorMachine+Pause`), event by event: no process, no clock.
@Suite struct SupervisorMachinePauseTests {
    typealias Machine = SupervisorMachine
    static let at = SupervisorMachineTests.at
    static let why = "the data (reader floor 1.3.0) must be converted back for 1.2.0"
    static let request = SwitchRequest(id: "42-1", source: .cli, reason: "bad", force: false, command: "rollbackctl rollback", fromBuild: "cur")

    static func serving(_ pairs: [String: String] = ["supervise.drain_ms": "500", "supervise.grace_ms": "5000"]) -> Machine {
        SupervisorMachineTests.serving(pairs, listeners: true)
    }

    static func said(_ actions: [Machine.Action]) -> [String] { SupervisorMachineTests.said(actions) }

    /// A machine that drained its child for a handed-off rollback and saw it exit at 1.6.
    static func converting() -> Machine {
        var machine = serving()
        _ = machine.handle(.switchRequested(request, path: .stopFirst(why: why)), at: at(1))
        _ = machine.handle(.exited(pid: 100, .exited(0)), at: at(1.6))
        return machine
    }

    @Test func aHandedOffRollbackDrainsTheChildAtOnceAndStartsNothing() {
        var machine = Self.serving()
        let actions = machine.handle(.switchRequested(Self.request, path: .stopFirst(why: Self.why)), at: Self.at(1))
        #expect(actions == [.say("the persisted choice now selects the previous slot; stop-first: \(Self.why); stopping the current slot (pid 100) first, new connections wait in the queue."),
                            .notifySystemd(["RELOADING=1", "STATUS=Switching to the previous slot (1.2.0), stop-first", "MONOTONIC_USEC=1000000"]),
                            .drain(pid: 100), .publish])
        #expect(machine.serving == nil && machine.candidate == nil && machine.watchedSlot == nil)
        #expect(machine.draining.map(\.pid) == [100])
        #expect(machine.pause?.step == .stopping && machine.pause?.beganAt == 1_800_000_001_000)
        // Drained as after a start-first switch: again halfway, SIGTERM, SIGKILL after the grace.
        #expect(machine.handle(.tick, at: Self.at(1.25)) == [.drain(pid: 100)])
        #expect(machine.handle(.tick, at: Self.at(1.5)) == [.kill(pid: 100, signal: SIGTERM)])
        #expect(machine.handle(.tick, at: Self.at(6.5)) == [.kill(pid: 100, signal: SIGKILL)])
    }

    /// The launcher in the drained child says when its connections hold no work: SIGTERM then,
    /// not at the end of supervise.drain_ms; said twice, or by a child that is not draining, it
    /// changes nothing.
    @Test func aDrainedChildThatSaysItIsIdleIsStoppedAtOnce() {
        var machine = Self.serving()
        _ = machine.handle(.switchRequested(Self.request, path: .stopFirst(why: Self.why)), at: Self.at(1))
        #expect(machine.handle(.drained(pid: 100), at: Self.at(1.004)) == [.kill(pid: 100, signal: SIGTERM)])
        #expect(machine.handle(.drained(pid: 100), at: Self.at(1.006)) == [])
        #expect(machine.handle(.drained(pid: 555), at: Self.at(1.006)) == [])
        // Neither the second drain signal nor a second SIGTERM follows; SIGKILL after the grace.
        #expect(machine.handle(.tick, at: Self.at(1.5)) == [])
        #expect(machine.handle(.tick, at: Self.at(6.004)) == [.kill(pid: 100, signal: SIGKILL)])
    }

    @Test func aServingChildThatSaysItIsIdleIsNotStopped() {
        var machine = Self.serving()
        #expect(machine.handle(.drained(pid: 100), at: Self.at(1)) == [])
        #expect(machine.serving?.pid == 100)
    }

    @Test func onceTheChildExitedTheDataIsConvertedThenTheTargetStarts() {
        var machine = Self.serving()
        _ = machine.handle(.switchRequested(Self.request, path: .stopFirst(why: Self.why)), at: Self.at(1))
        #expect(machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(1.6)) == [.convert(Self.request)])
        #expect(machine.pause?.step == .converting && machine.children.isEmpty)
        #expect(machine.handle(.converted(failure: nil), at: Self.at(2)) == [.spawn(.stopFirst(.previous))])
        #expect(machine.handle(.spawned(.stopFirst(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(2)) == [.publish])
        #expect(machine.serving?.pid == 200 && machine.serving?.phase == .starting)
        _ = machine.handle(.reported(pid: 200, slot: .previous, build: "prev"), at: Self.at(2.1))
        _ = machine.handle(.saidReady(pid: 200), at: Self.at(2.412))
        let actions = machine.handle(.tick, at: Self.at(2.412))
        let sentence = "stop-first, 1.3.0 → 1.2.0: \(Self.why); paused 1412 ms"
        #expect(Self.said(actions) == ["the previous slot (pid 200) is ready (it said it was ready); \(sentence)."])
        #expect(actions.contains(.recordHistory(.stopFirst, from: .current, to: .previous, reason: sentence)))
        #expect(actions.last == .reconsiderChoice)
        #expect(machine.state == .running(machine.serving!) && machine.serving?.pid == 200)
        var expected = SupervisorRecord.LastSwitch(path: "stop-first", from: .current, to: .previous, fromVersion: "1.3.0", toVersion: "1.2.0",
                                                   why: Self.why, pausedMilliseconds: 1412, at: 1_800_000_002)
        expected.drainedAtMilliseconds = 1_800_000_001_000
        expected.stoppedAtMilliseconds = 1_800_000_001_000
        expected.targetStartedAtMilliseconds = 1_800_000_002_000
        expected.readyAtMilliseconds = 1_800_000_002_000
        #expect(machine.lastSwitch == expected)
        #expect(machine.pause == nil && machine.watchedSlot == .previous)
    }

    @Test func aRefusedConversionStartsTheOldSlotAgain() {
        var machine = Self.converting()
        let actions = machine.handle(.converted(failure: "The data cannot be converted back"), at: Self.at(2))
        let reason = "the switch to the previous slot (1.2.0) did not happen: The data cannot be converted back; the current slot (1.3.0) serves again, on data in its own format"
        #expect(actions == [.say("The switch to the previous slot (1.2.0) did not happen: The data cannot be converted back; the current slot (1.3.0) serves again, on data in its own format."),
                            .recordHistory(.switchFailed, from: .current, to: .previous, reason: reason),
                            .acknowledgeChoice, .spawn(.restore(.current)), .publish])
        #expect(machine.handle(.spawned(.restore(.current), pid: 300, intendedSlot: .current, goodBuilds: []), at: Self.at(2)) == [.publish])
        #expect(machine.state == .running(machine.serving!) && machine.serving?.pid == 300)
        _ = machine.handle(.reported(pid: 300, slot: .current, build: "cur"), at: Self.at(2))
        _ = machine.handle(.saidReady(pid: 300), at: Self.at(2.5))
        // Restored: the choice is acknowledged, not reconsidered (no retry on its own).
        #expect(machine.handle(.tick, at: Self.at(2.5)).last == .acknowledgeChoice)
        #expect(machine.switchFailure?.reason == reason)
    }

    @Test func aTargetThatExitsBeforeItIsReadyRestoresTheOldSlot() {
        var machine = Self.converting()
        _ = machine.handle(.converted(failure: nil), at: Self.at(2))
        _ = machine.handle(.spawned(.stopFirst(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(2))
        let actions = machine.handle(.exited(pid: 200, .exited(70)), at: Self.at(3))
        #expect(Self.said(actions) == ["The switch to the previous slot (1.2.0) did not happen: it exited with code 70 before it was ready; the current slot (1.3.0) serves again, on data in its own format."])
        #expect(actions.contains(.spawn(.restore(.current))))
        #expect(machine.pause?.step == .restoring && machine.switchFailure?.slot == .previous)
    }

    /// With `analysis.baseline=true` a stop-first switch has no baseline: the old build stopped
    /// before the target started. The target's window says so and judges by its absolute checks.
    @Test func aStopFirstSwitchHasNoBaselineAndItsWindowSaysWhy() {
        var machine = Self.converting()
        machine.configuration.comparesWithBaseline = true
        machine.bakeWindowSeconds = 30
        _ = machine.handle(.converted(failure: nil), at: Self.at(2))
        _ = machine.handle(.spawned(.stopFirst(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(2))
        _ = machine.handle(.reported(pid: 200, slot: .previous, build: "prev"), at: Self.at(2.1))
        _ = machine.handle(.saidReady(pid: 200), at: Self.at(2.4))
        let actions = machine.handle(.tick, at: Self.at(2.4))
        #expect(machine.baseline == nil)
        #expect(machine.probation.record?.comparison == .none("the switch stopped the old build first (\(Self.why))"))
        #expect(Self.said(actions).contains("the previous build (1.2.0) is on probation for 30 s, judged by its absolute checks only: no baseline, because the switch stopped the old build first (\(Self.why))."))
    }

    @Test func aTargetNotReadyByItsDeadlineIsAbortedThenTheOldSlotRestored() {
        var machine = Self.serving(["supervise.start_deadline_ms": "3000"])
        _ = machine.handle(.choiceSelects(.previous, path: .stopFirst(why: Self.why)), at: Self.at(1))
        _ = machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(1.5))
        _ = machine.handle(.spawned(.stopFirst(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1.5))
        #expect(machine.nextDeadline == 4.5)
        let hung = machine.handle(.tick, at: Self.at(4.5))
        #expect(hung.first == .kill(pid: 200, signal: SIGABRT))
        let actions = machine.handle(.exited(pid: 200, .killed(signal: SIGABRT)), at: Self.at(5))
        #expect(Self.said(actions).first?.contains("did not happen: it was not ready within 3 s; the current slot (1.3.0) serves again") == true)
        #expect(actions.contains(.spawn(.restore(.current))))
    }

    @Test func aStopFirstChoiceWaitsForTheChildThenStartsTheTargetWhichConvertsItself() {
        var machine = Self.serving()
        let why = "1.3.0 migrates notes-v2, which 1.2.0 cannot read"
        let actions = machine.handle(.choiceSelects(.previous, path: .stopFirst(why: why)), at: Self.at(1))
        #expect(actions.contains(.drain(pid: 100)) && !actions.contains { if case .spawn = $0 { true } else { false } })
        #expect(machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(1.6)) == [.spawn(.stopFirst(.previous))])
    }

    @Test func aStartFirstChoiceIsTodaysLiveSwitch() {
        var machine = Self.serving()
        let actions = machine.handle(.choiceSelects(.previous, path: .startFirst), at: Self.at(1))
        #expect(actions.last == .spawn(.candidate(.previous)))
    }

    @Test func withoutSocketsTheChildIsStoppedWithSIGTERMAtOnce() {
        var machine = SupervisorMachineTests.serving(["supervise.grace_ms": "3000"], listeners: false)
        let actions = machine.handle(.switchRequested(Self.request, path: .stopFirst(why: Self.why)), at: Self.at(1))
        #expect(actions.contains(.kill(pid: 100, signal: SIGTERM)) && !actions.contains(.drain(pid: 100)))
        #expect(machine.handle(.tick, at: Self.at(4)) == [.kill(pid: 100, signal: SIGKILL)])
    }

    @Test func everyDrainingChildMustBeGoneBeforeTheConversion() {
        var machine = Self.serving()
        // A start-first switch to the previous slot, then a handed-off... from the previous slot
        // nothing is handed off: the request converts at once.
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1))
        _ = machine.handle(.reported(pid: 200, slot: .previous, build: "prev"), at: Self.at(1))
        _ = machine.handle(.saidReady(pid: 200), at: Self.at(1.1))
        _ = machine.handle(.tick, at: Self.at(1.1))
        #expect(machine.draining.map(\.pid) == [100])
        _ = machine.handle(.choiceSelects(.current, path: .stopFirst(why: "x")), at: Self.at(1.2))
        #expect(machine.draining.map(\.pid) == [100, 200])
        #expect(machine.handle(.exited(pid: 200, .exited(0)), at: Self.at(1.7)) == [])
        #expect(machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(1.8)) == [.spawn(.stopFirst(.current))])
    }

    @Test func aRequestWhileThePreviousSlotServesConvertsAtOnce() {
        var machine = Machine(SupervisorMachineTests.machine().configuration)
        _ = machine.handle(.start, at: Self.at(0))
        _ = machine.handle(.spawned(.first, pid: 100, intendedSlot: .previous, goodBuilds: []), at: Self.at(0))
        _ = machine.handle(.reported(pid: 100, slot: .previous, build: "prev"), at: Self.at(0))
        #expect(machine.handle(.switchRequested(Self.request, path: .stopFirst(why: Self.why)), at: Self.at(1)) == [.convert(Self.request)])
        #expect(machine.handle(.converted(failure: nil), at: Self.at(1)) == [])
    }

    /// The data was converted between the request and the supervisor's reading of it (the
    /// hand-off asked, then something else converted): the previous build reads it, so the
    /// switch runs at once, beside the serving child, and nothing is drained or paused.
    @Test func aRequestWhoseDataNeedsNoConversionAnyMoreIsNotPaused() {
        var machine = Self.serving()
        #expect(machine.handle(.switchRequested(Self.request, path: .startFirst), at: Self.at(1)) == [.convert(Self.request)])
        #expect(machine.pause == nil && machine.draining.isEmpty && machine.serving?.pid == 100)
        #expect(machine.handle(.converted(failure: nil), at: Self.at(1)) == [])
        #expect(machine.serving?.pid == 100)
    }

    @Test func sigtermDuringThePauseStopsEverything() {
        var machine = Self.converting()
        _ = machine.handle(.converted(failure: nil), at: Self.at(2))
        _ = machine.handle(.spawned(.stopFirst(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(2))
        #expect(machine.handle(.signal(SIGTERM), at: Self.at(3)).contains(.kill(pid: 200, signal: SIGTERM)))
        #expect(machine.handle(.exited(pid: 200, .exited(0)), at: Self.at(3.1)) == [.exit(0)])
    }
}
