#if canImport(Glibc)
import Glibc
#endif
@testable import SwitchbackCore
import Testing

/// Supervise mode's decisions (`SupervisorMachine`), event by event: no process, no clock.
/// Time is the `at:` of each event, in monotonic seconds.
@Suite struct SupervisorMachineTests {
    typealias Machine = SupervisorMachine

    static func machine(_ pairs: [String: String] = [:], listeners: Bool = false, probeShared: Bool = false) -> Machine {
        var text = KeyValueText()
        for (key, value) in pairs.sorted(by: { $0.key < $1.key }) { text.append(key, value) }
        let slot = { (version: String) in
            Manifest.SlotRecord(version: version, build: "b", abiStamp: "s", size: 1, sha256: String(repeating: "0", count: 64))
        }
        let manifest = Manifest(appID: "com.example.test", current: slot("1.3.0"), previous: slot("1.2.0"), settings: text)
        return Machine(.init(settings: SupervisorSettings(manifest: manifest), hasListeners: listeners, probeSharesListener: probeShared,
                             currentVersion: "1.3.0", previousVersion: "1.2.0", supervisorPID: 7))
    }

    static func at(_ seconds: Double) -> Machine.Moment { .init(monotonic: seconds, unix: 1_800_000_000 + Int64(seconds)) }

    /// A machine whose first child (pid 100) runs the current slot (build "cur"), started at 0.
    static func serving(_ pairs: [String: String] = [:], listeners: Bool = false, ready: Bool = true) -> Machine {
        var machine = machine(pairs, listeners: listeners)
        _ = machine.handle(.start, at: at(0))
        _ = machine.handle(.spawned(.first, pid: 100, intendedSlot: .current, goodBuilds: []), at: at(0))
        _ = machine.handle(.reported(pid: 100, slot: .current, build: "cur"), at: at(0))
        if ready {
            _ = machine.handle(.saidReady(pid: 100), at: at(0.1))
            _ = machine.handle(.tick, at: at(0.1))
        }
        return machine
    }

    static func said(_ actions: [Machine.Action]) -> [String] {
        actions.compactMap { if case .say(let text) = $0 { return text } else { return nil } }
    }

    // MARK: First start, readiness

    @Test func firstStartSpawnsTheChosenSlotAndWaits() {
        var machine = Self.machine()
        #expect(machine.handle(.start, at: Self.at(0)) == [.spawn(.first)])
        #expect(machine.handle(.spawned(.first, pid: 100, intendedSlot: .current, goodBuilds: []), at: Self.at(0)) == [])
        guard case .running(let child) = machine.state else { Issue.record("not running: \(machine.state)"); return }
        #expect(child.pid == 100 && child.phase == .starting && child.deadline == 90)
        // A second start does nothing.
        #expect(machine.handle(.start, at: Self.at(1)) == [])
    }

    @Test func aReportNamesTheSlotAndPublishes() {
        var machine = Self.serving(ready: false)
        #expect(machine.serving?.slot == .current && machine.serving?.build == "cur")
        #expect(machine.handle(.reported(pid: 555, slot: .previous, build: "x"), at: Self.at(1)) == [])
    }

    @Test func readyOneMakesTheChildReadyAtTheNextTick() {
        var machine = Self.serving(ready: false)
        #expect(machine.handle(.saidReady(pid: 100), at: Self.at(0.5)) == [])
        let actions = machine.handle(.tick, at: Self.at(0.5))
        #expect(machine.serving?.phase == .ready)
        let child = machine.serving!
        #expect(actions == [.recordGoodMark(child, how: "it said it was ready"),
                            .notifySystemd(["READY=1", "STATUS=Running the current slot (1.3.0), pid 100", "MAINPID=7"]),
                            .publish, .reconsiderChoice])
    }

    @Test func theMinimumReadyTimeDelaysReadiness() {
        var machine = Self.serving(["supervise.min_ready_ms": "2000"], ready: false)
        _ = machine.handle(.saidReady(pid: 100), at: Self.at(1))
        _ = machine.handle(.tick, at: Self.at(2.9))
        #expect(machine.serving?.phase == .starting)
        #expect(machine.nextDeadline == 3)
        _ = machine.handle(.tick, at: Self.at(3))
        #expect(machine.serving?.phase == .ready)
    }

    @Test func aGoodMarkOfItsBuildMakesTheChildReady() {
        var machine = Self.serving(ready: false)
        #expect(machine.awaitsGoodMark)
        // Good before the child started: not its mark.
        var started = Self.machine()
        _ = started.handle(.spawned(.first, pid: 100, intendedSlot: .current, goodBuilds: ["cur"]), at: Self.at(0))
        _ = started.handle(.reported(pid: 100, slot: .current, build: "cur"), at: Self.at(0))
        _ = started.handle(.goodBuilds(["cur"]), at: Self.at(1))
        #expect(started.serving?.readySignal == nil)
        // Marked since: ready.
        _ = machine.handle(.goodBuilds(["other"]), at: Self.at(1))
        #expect(machine.serving?.readySignal == nil)
        _ = machine.handle(.goodBuilds(["cur"]), at: Self.at(1))
        #expect(machine.serving?.readySignal == .init(at: 1, how: "it marked itself good"))
        #expect(!machine.awaitsGoodMark)
        _ = machine.handle(.tick, at: Self.at(1))
        #expect(machine.serving?.phase == .ready)
    }

    @Test func aProbeRunsEveryIntervalUntilItPasses() {
        var machine = Self.serving(["supervise.ready": "tcp:127.0.0.1:8080", "supervise.probe_interval_ms": "250"], ready: false)
        #expect(machine.handle(.tick, at: Self.at(0)) == [.startProbe(pid: 100)])
        #expect(machine.probing == 100)
        // One attempt at a time.
        #expect(machine.handle(.tick, at: Self.at(0.125)) == [])
        _ = machine.handle(.probeFinished(pid: 100, .failed("refused")), at: Self.at(0.25))
        #expect(machine.probing == nil && machine.nextDeadline == 0.5)
        #expect(machine.handle(.tick, at: Self.at(0.375)) == [])
        #expect(machine.handle(.tick, at: Self.at(0.5)) == [.startProbe(pid: 100)])
        _ = machine.handle(.probeFinished(pid: 100, .passed), at: Self.at(0.625))
        let actions = machine.handle(.tick, at: Self.at(0.625))
        #expect(machine.serving?.phase == .ready)
        #expect(actions.contains(.recordGoodMark(machine.serving!, how: "a TCP connect to 127.0.0.1:8080 passed")))
    }

    @Test func aProbeOfASharedSocketAnswersForACandidateOnlyOnceItHoldsTheSocket() {
        var machine = Self.machine(["supervise.ready": "tcp:127.0.0.1:8080"], listeners: true, probeShared: true)
        _ = machine.handle(.spawned(.first, pid: 100, intendedSlot: .current, goodBuilds: []), at: Self.at(0))
        _ = machine.handle(.reported(pid: 100, slot: .current, build: "cur"), at: Self.at(0))
        _ = machine.handle(.probeFinished(pid: 100, .passed), at: Self.at(0.1))
        _ = machine.handle(.tick, at: Self.at(0.1))
        #expect(machine.serving?.phase == .ready)
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1))
        _ = machine.handle(.probeFinished(pid: 200, .passed), at: Self.at(1.1))
        #expect(machine.candidate?.readySignal == nil)
        _ = machine.handle(.adoptedSocket(pid: 200), at: Self.at(1.2))
        _ = machine.handle(.probeFinished(pid: 200, .passed), at: Self.at(1.3))
        #expect(machine.candidate?.readySignal?.how == "a TCP connect to 127.0.0.1:8080 passed")
    }

    // MARK: Start deadline

    @Test func aChildNotReadyByItsDeadlineIsAbortedAndRecorded() {
        var machine = Self.serving(["supervise.start_deadline_ms": "2000"], ready: false)
        #expect(machine.nextDeadline == 2)
        #expect(machine.handle(.tick, at: Self.at(1.9)) == [])
        let actions = machine.handle(.tick, at: Self.at(2))
        let reason = "the current slot (pid 100) was not ready within 2 s (supervise.start_deadline_ms); stopped with SIGABRT for a backtrace, counted as a failed start"
        #expect(actions == [.kill(pid: 100, signal: SIGABRT), .say("The current slot (pid 100) was not ready within 2 s (supervise.start_deadline_ms); stopped with SIGABRT for a backtrace, counted as a failed start."),
                            .recordHistory(.hungStart, from: .current, to: .current, reason: reason)])
        #expect(machine.serving?.stop == .hung(seconds: 2))
        // SIGKILL after the time for a backtrace.
        #expect(machine.handle(.tick, at: Self.at(6.9)) == [])
        #expect(machine.handle(.tick, at: Self.at(7)) == [.kill(pid: 100, signal: SIGKILL)])
        // Its exit is a crash: restarted.
        let exit = machine.handle(.exited(pid: 100, .killed(signal: SIGABRT)), at: Self.at(7.1))
        #expect(Self.said(exit) == ["the current slot (pid 100) was killed by signal 6; restarting in 100 ms (restart 1)."])
    }

    @Test func extendTimeoutMovesTheDeadlineLaterOnly() {
        var machine = Self.serving(["supervise.start_deadline_ms": "2000"], ready: false)
        _ = machine.handle(.extendedTimeout(pid: 100, microseconds: 5_000_000), at: Self.at(1))
        #expect(machine.serving?.deadline == 6)
        _ = machine.handle(.extendedTimeout(pid: 100, microseconds: 1_000_000), at: Self.at(2))
        #expect(machine.serving?.deadline == 6)
        #expect(machine.handle(.tick, at: Self.at(5.9)) == [])
        let actions = machine.handle(.tick, at: Self.at(6))
        #expect(actions.first == .kill(pid: 100, signal: SIGABRT))
        #expect(Self.said(actions).first?.contains("within 6 s") == true)
    }

    // MARK: Crashes and backoff

    @Test func aCrashRestartsAfterABackoffThatDoubles() {
        var machine = Self.serving(["supervise.backoff_initial_ms": "100", "supervise.backoff_max_ms": "300"])
        var actions = machine.handle(.exited(pid: 100, .exited(3)), at: Self.at(1))
        #expect(actions == [.say("the current slot (pid 100) exited with code 3; restarting in 100 ms (restart 1)."),
                            .countCrash(slot: .current, build: "cur"), .publish])
        #expect(machine.state == .backingOff(until: 1.1))
        #expect(machine.nextDeadline == 1.1)
        #expect(machine.handle(.tick, at: Self.at(1.05)) == [])
        #expect(machine.handle(.tick, at: Self.at(1.1)) == [.spawn(.restart)])
        #expect(machine.handle(.spawned(.restart, pid: 101, intendedSlot: .current, goodBuilds: []), at: Self.at(1.1)) == [.publish])
        actions = machine.handle(.exited(pid: 101, .killed(signal: SIGSEGV)), at: Self.at(1.2))
        #expect(Self.said(actions) == ["the current slot (pid 101) was killed by signal 11; restarting in 200 ms (restart 2)."])
        // Not named yet: nothing to count against a build.
        #expect(!actions.contains { if case .countCrash = $0 { true } else { false } })
        _ = machine.handle(.spawned(.restart, pid: 102, intendedSlot: .current, goodBuilds: []), at: Self.at(1.4))
        actions = machine.handle(.exited(pid: 102, .exited(1)), at: Self.at(1.5))
        #expect(Self.said(actions) == ["the current slot (pid 102) exited with code 1; restarting in 300 ms (restart 3)."])
        #expect(machine.restarts == 3)
        // Capped at the maximum.
        _ = machine.handle(.spawned(.restart, pid: 103, intendedSlot: .current, goodBuilds: []), at: Self.at(1.8))
        actions = machine.handle(.exited(pid: 103, .exited(1)), at: Self.at(1.9))
        #expect(Self.said(actions) == ["the current slot (pid 103) exited with code 1; restarting in 300 ms (restart 4)."])
    }

    @Test func aChildThatRanLongEnoughResetsTheBackoff() {
        var machine = Self.serving(["supervise.backoff_reset_after_ms": "10000"])
        _ = machine.handle(.exited(pid: 100, .exited(1)), at: Self.at(1))
        _ = machine.handle(.spawned(.restart, pid: 101, intendedSlot: .current, goodBuilds: []), at: Self.at(1.1))
        let actions = machine.handle(.exited(pid: 101, .exited(1)), at: Self.at(11.1))
        #expect(Self.said(actions) == ["the current slot (pid 101) exited with code 1; restarting in 100 ms (restart 2)."])
    }

    @Test func aCleanExitEndsTheSupervisor() {
        var machine = Self.serving()
        #expect(machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(1)) == [.exit(0)])
        #expect(machine.state == .stopped(exitCode: 0))
        #expect(machine.handle(.tick, at: Self.at(2)) == [])
    }

    @Test func aFailedSpawnRetriesAfterTheBackoff() {
        var machine = Self.machine(["supervise.backoff_initial_ms": "250"])
        _ = machine.handle(.start, at: Self.at(0))
        #expect(machine.handle(.spawnFailed(.first, error: "Resource temporarily unavailable"), at: Self.at(0))
                == [.say("starting the app failed: Resource temporarily unavailable; retrying in 250 ms.")])
        #expect(machine.state == .backingOff(until: 0.25))
        #expect(machine.handle(.tick, at: Self.at(0.25)) == [.spawn(.restart)])
        #expect(machine.handle(.spawnFailed(.restart, error: "x"), at: Self.at(0.25)) == [.say("starting the app failed: x; retrying in 500 ms."), .publish])
        #expect(machine.state == .backingOff(until: 0.75))
    }

    /// The crash loop: every abnormal exit of a named build is offered for counting; the
    /// driver answers for a build the health file calls good, and the limit within the window
    /// marks it bad (the driver then records the switch). Each restart asks the persisted
    /// choice again, so it starts the other slot once the switch is recorded.
    @Test func aGoodBuildThatKeepsCrashingIsMarkedBadAndTheRestartTakesTheChoice() {
        var machine = Self.serving(["supervise.crash_limit": "3", "supervise.crash_window_ms": "60000"])
        var pid: pid_t = 100
        for round in 1...3 {
            let time = Double(round * 10)
            let actions = machine.handle(.exited(pid: pid, .killed(signal: SIGSEGV)), at: Self.at(time))
            #expect(actions.contains(.countCrash(slot: .current, build: "cur")))
            let counted = machine.handle(.goodBuildCrashed(slot: .current, build: "cur"), at: Self.at(time))
            #expect(counted == (round < 3 ? [] : [.markBad(slot: .current, build: "cur", why: "crashed 3 times within 60 s after it was marked good")]))
            guard case .backingOff(let until) = machine.state else { Issue.record("no backoff"); return }
            #expect(machine.handle(.tick, at: Self.at(until)) == [.spawn(.restart)])
            pid += 1
            let slot: BuildSlot = round < 3 ? .current : .previous
            _ = machine.handle(.spawned(.restart, pid: pid, intendedSlot: slot, goodBuilds: []), at: Self.at(until))
            _ = machine.handle(.reported(pid: pid, slot: slot, build: round < 3 ? "cur" : "prev"), at: Self.at(until))
        }
        #expect(machine.serving?.slot == .previous && machine.restarts == 3)
    }

    @Test func crashesOutsideTheWindowDoNotAddUp() {
        var machine = Self.machine(["supervise.crash_limit": "2", "supervise.crash_window_ms": "10000"])
        #expect(machine.handle(.goodBuildCrashed(slot: .current, build: "cur"), at: Self.at(0)) == [])
        #expect(machine.handle(.goodBuildCrashed(slot: .current, build: "cur"), at: Self.at(10)) == [])
        #expect(machine.handle(.goodBuildCrashed(slot: .previous, build: "prev"), at: Self.at(11)) == [])
        #expect(machine.handle(.goodBuildCrashed(slot: .current, build: "cur"), at: Self.at(15)).count == 1)
    }

    // MARK: Switches

    @Test func aChangedChoiceWithSocketsStartsACandidateBesideTheServingChild() {
        var machine = Self.serving(listeners: true)
        #expect(machine.watchedSlot == .current)
        #expect(machine.handle(.choiceSelects(.current), at: Self.at(1)) == [])
        let actions = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        #expect(actions == [.say("the persisted choice now selects the previous slot; starting it beside the current slot (pid 100), which serves until it is ready."),
                            .notifySystemd(["RELOADING=1", "STATUS=Switching to the previous slot (1.2.0)", "MONOTONIC_USEC=1000000"]),
                            .spawn(.candidate(.previous))])
        #expect(machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1)) == [.publish])
        #expect(machine.candidate?.pid == 200 && machine.serving?.pid == 100)
        #expect(machine.watchedSlot == nil)
    }

    /// Both builds bad: the planner, not a written choice, selects the other slot; the switch is
    /// recorded in the history as a fallback (nobody else writes a line for it), and only when
    /// the machine does switch.
    @Test func aSwitchThePlannerMakesWithoutAChoiceIsRecordedAsAFallback() {
        let why = "the supervisor runs the previous slot (1.2.0) because both builds are bad and this one started well most recently"
        var machine = Self.serving(listeners: true)
        #expect(machine.handle(.choiceSelects(.current, fallback: why), at: Self.at(1)) == [])
        let actions = machine.handle(.choiceSelects(.previous, fallback: why), at: Self.at(1))
        #expect(actions.first == .recordHistory(.fallback, from: .current, to: .previous, reason: why))
        #expect(Array(actions.dropFirst()) == [.say("the persisted choice now selects the previous slot; starting it beside the current slot (pid 100), which serves until it is ready."),
                                              .notifySystemd(["RELOADING=1", "STATUS=Switching to the previous slot (1.2.0)", "MONOTONIC_USEC=1000000"]),
                                              .spawn(.candidate(.previous))])
    }

    @Test func aReadyCandidateTakesOverAndTheOldChildDrains() {
        var machine = Self.serving(["supervise.drain_ms": "500", "supervise.grace_ms": "5000"], listeners: true)
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1))
        _ = machine.handle(.reported(pid: 200, slot: .previous, build: "prev"), at: Self.at(1.1))
        _ = machine.handle(.saidReady(pid: 200), at: Self.at(2))
        let actions = machine.handle(.tick, at: Self.at(2))
        let new = machine.serving!
        #expect(actions == [.drain(pid: 100),
                            .say("the previous slot (pid 200) is ready (it said it was ready); stopping the current slot (pid 100) gracefully."),
                            .recordGoodMark(new, how: "it said it was ready"),
                            .notifySystemd(["READY=1", "STATUS=Running the previous slot (1.2.0), pid 200", "MAINPID=7"]),
                            .publish, .reconsiderChoice])
        #expect(new.pid == 200 && new.phase == .ready && machine.candidate == nil)
        #expect(machine.draining.map(\.pid) == [100] && machine.draining[0].phase == .draining)
        // The drain signal again halfway, SIGTERM at the end of the drain, SIGKILL after the grace.
        #expect(machine.handle(.tick, at: Self.at(2.25)) == [.drain(pid: 100)])
        #expect(machine.handle(.tick, at: Self.at(2.5)) == [.kill(pid: 100, signal: SIGTERM)])
        #expect(machine.handle(.tick, at: Self.at(7.4)) == [])
        #expect(machine.handle(.tick, at: Self.at(7.5)) == [.kill(pid: 100, signal: SIGKILL)])
        #expect(machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(7.6)) == [])
        #expect(machine.draining.isEmpty && machine.state == .running(machine.serving!))
    }

    @Test func aCandidateThatExitsBeforeItIsReadyLeavesTheServingChild() {
        var machine = Self.serving(listeners: true)
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1))
        let actions = machine.handle(.exited(pid: 200, .exited(70)), at: Self.at(2))
        let reason = "the switch to the previous slot (1.2.0) did not happen: it exited with code 70 before it was ready; the current slot (1.3.0) keeps serving"
        #expect(actions == [.say("The switch to the previous slot (1.2.0) did not happen: it exited with code 70 before it was ready; the current slot (1.3.0) keeps serving."),
                            .recordHistory(.switchFailed, from: .current, to: .previous, reason: reason),
                            .acknowledgeChoice,
                            .notifySystemd(["READY=1", "STATUS=Running the current slot (1.3.0), pid 100; \(reason)"]),
                            .publish])
        #expect(machine.serving?.pid == 100 && machine.candidate == nil)
        #expect(machine.switchFailure == .init(slot: .previous, at: 1_800_000_002, reason: reason))
        // A later switch that happens clears it.
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(3))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 201, intendedSlot: .previous, goodBuilds: []), at: Self.at(3))
        _ = machine.handle(.saidReady(pid: 201), at: Self.at(3))
        _ = machine.handle(.tick, at: Self.at(3))
        #expect(machine.switchFailure == nil && machine.serving?.pid == 201)
    }

    @Test func aCandidateNotReadyByItsDeadlineFailsTheSwitch() {
        var machine = Self.serving(["supervise.start_deadline_ms": "1500"], listeners: true)
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(10))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(10))
        let hung = machine.handle(.tick, at: Self.at(11.5))
        #expect(hung.first == .kill(pid: 200, signal: SIGABRT))
        #expect(hung.contains { if case .recordHistory(.hungStart, .current, .previous, _, .auto) = $0 { true } else { false } })
        let actions = machine.handle(.exited(pid: 200, .killed(signal: SIGABRT)), at: Self.at(11.6))
        #expect(Self.said(actions) == ["The switch to the previous slot (1.2.0) did not happen: it was not ready within 1.5 s; the current slot (1.3.0) keeps serving."])
    }

    @Test func aCandidateThatCannotBeStartedIsAFailedSwitch() {
        var machine = Self.serving(listeners: true)
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        let actions = machine.handle(.spawnFailed(.candidate(.previous), error: "Out of memory"), at: Self.at(1))
        #expect(actions == [.say("starting the app failed: Out of memory; retrying in 100 ms."), .publish])
        #expect(machine.switchFailure?.reason == "the previous slot could not be started")
        #expect(machine.state == .running(machine.serving!))
    }

    @Test func theServingChildExitingDuringASwitchHandsOverToTheCandidate() {
        var machine = Self.serving(listeners: true)
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1))
        let actions = machine.handle(.exited(pid: 100, .killed(signal: SIGKILL)), at: Self.at(2))
        #expect(actions == [.say("the current slot (pid 100) was killed by signal 9; the previous slot (pid 200), already starting, takes over."),
                            .countCrash(slot: .current, build: "cur"), .publish])
        #expect(machine.serving?.pid == 200 && machine.candidate == nil)
        // Even a clean exit of the old child leaves the candidate serving.
        var clean = Self.serving(listeners: true)
        _ = clean.handle(.choiceSelects(.previous), at: Self.at(1))
        _ = clean.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1))
        #expect(!clean.handle(.exited(pid: 100, .exited(0)), at: Self.at(2)).contains(.exit(0)))
        #expect(clean.serving?.pid == 200)
    }

    @Test func withoutSocketsTheServingChildStopsFirst() {
        var machine = Self.serving(["supervise.grace_ms": "3000"], listeners: false)
        let actions = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        #expect(actions == [.say("the persisted choice now selects the previous slot; replacing the current slot (pid 100)."),
                            .kill(pid: 100, signal: SIGTERM)])
        guard case .replacing(let child) = machine.state else { Issue.record("not replacing"); return }
        #expect(child.killAt == 4 && machine.watchedSlot == nil)
        #expect(machine.handle(.tick, at: Self.at(4)) == [.kill(pid: 100, signal: SIGKILL)])
        #expect(machine.handle(.exited(pid: 100, .killed(signal: SIGKILL)), at: Self.at(4.1)) == [.spawn(.replacement)])
        #expect(machine.handle(.spawned(.replacement, pid: 101, intendedSlot: .previous, goodBuilds: []), at: Self.at(4.1)) == [.publish])
        #expect(machine.serving?.intendedSlot == .previous && machine.restarts == 0)
    }

    @Test func anUnreadyChildIsReplacedStopFirstEvenWithSockets() {
        var machine = Self.serving(listeners: true, ready: false)
        let actions = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        #expect(actions.last == .kill(pid: 100, signal: SIGTERM))
    }

    // MARK: Signals

    @Test func sigtermStopsEveryChildThenExitsWithTheServingChildsStatus() {
        var machine = Self.serving(["supervise.grace_ms": "2000"], listeners: true)
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1))
        let actions = machine.handle(.signal(SIGTERM), at: Self.at(2))
        #expect(actions == [.notifySystemd(["STOPPING=1"]), .kill(pid: 100, signal: SIGTERM), .kill(pid: 200, signal: SIGTERM)])
        #expect(machine.isStopping && machine.watchedSlot == nil && !machine.awaitsGoodMark)
        // No restart, no switch while stopping.
        #expect(machine.handle(.choiceSelects(.current), at: Self.at(2.1)) == [])
        #expect(machine.handle(.exited(pid: 200, .exited(1)), at: Self.at(2.5)) == [])
        #expect(machine.handle(.tick, at: Self.at(4)) == [.kill(pid: 100, signal: SIGKILL)])
        #expect(machine.handle(.exited(pid: 100, .killed(signal: SIGKILL)), at: Self.at(4.1)) == [.exit(128 + SIGKILL)])
    }

    @Test func sigtermWithNoChildExitsAtOnce() {
        var machine = Self.serving()
        _ = machine.handle(.exited(pid: 100, .exited(1)), at: Self.at(1))
        #expect(machine.handle(.signal(SIGINT), at: Self.at(1.01)) == [.exit(128 + SIGINT)])
    }

    @Test func sigtermWaitsForDrainingChildren() {
        var machine = Self.serving(listeners: true)
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(1))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(1))
        _ = machine.handle(.saidReady(pid: 200), at: Self.at(1))
        _ = machine.handle(.tick, at: Self.at(1))
        _ = machine.handle(.signal(SIGTERM), at: Self.at(1.1))
        #expect(machine.handle(.exited(pid: 200, .killed(signal: SIGTERM)), at: Self.at(1.2)) == [])
        #expect(machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(1.3)) == [.exit(128 + SIGTERM)])
    }

    @Test func otherSignalsGoToTheServingChild() {
        var machine = Self.serving()
        #expect(machine.handle(.signal(SIGHUP), at: Self.at(1)) == [.kill(pid: 100, signal: SIGHUP)])
        #expect(machine.handle(.signal(SIGUSR1), at: Self.at(1)) == [.kill(pid: 100, signal: SIGUSR1)])
        _ = machine.handle(.exited(pid: 100, .exited(1)), at: Self.at(2))
        #expect(machine.handle(.signal(SIGHUP), at: Self.at(2)) == [])
    }

    @Test func sigtermCancelsARunningProbe() {
        var machine = Self.serving(["supervise.ready": "command:true"], ready: false)
        _ = machine.handle(.tick, at: Self.at(0))
        #expect(machine.handle(.signal(SIGTERM), at: Self.at(0.1)).last == .cancelProbe(pid: 100))
        _ = machine.handle(.probeCancelled(pid: 100), at: Self.at(0.1))
        #expect(machine.probing == nil)
    }

    // MARK: Watchdog

    @Test func aReadyChildThatStopsPingingIsAbortedAsACrash() {
        var machine = Self.serving(["supervise.watchdog_ms": "1000"])
        _ = machine.handle(.watchdogPing(pid: 100), at: Self.at(0.8))
        #expect(machine.nextDeadline == 1.8)
        #expect(machine.handle(.tick, at: Self.at(1.7)) == [])
        let actions = machine.handle(.tick, at: Self.at(1.8))
        #expect(actions == [.kill(pid: 100, signal: SIGABRT),
                            .say("the current slot (pid 100) sent no WATCHDOG=1 within 1000 ms (supervise.watchdog_ms); stopped with SIGABRT for a backtrace, counted as a crash.")])
        #expect(machine.serving?.stop == .watchdog && machine.watchedSlot == nil)
        // Once only, then SIGKILL after the time for a backtrace.
        #expect(machine.handle(.tick, at: Self.at(2)) == [])
        #expect(machine.handle(.tick, at: Self.at(6.8)) == [.kill(pid: 100, signal: SIGKILL)])
        let exit = machine.handle(.exited(pid: 100, .killed(signal: SIGKILL)), at: Self.at(6.9))
        #expect(exit.contains(.countCrash(slot: .current, build: "cur")))
    }

    @Test func theWatchdogStartsWhenTheChildIsReady() {
        var machine = Self.serving(["supervise.watchdog_ms": "1000"], ready: false)
        #expect(machine.handle(.tick, at: Self.at(5)) == [])
        _ = machine.handle(.saidReady(pid: 100), at: Self.at(5))
        _ = machine.handle(.tick, at: Self.at(5))
        #expect(machine.handle(.tick, at: Self.at(5.9)) == [])
        #expect(machine.handle(.tick, at: Self.at(6)).first == .kill(pid: 100, signal: SIGABRT))
    }

    // MARK: Events about nobody

    @Test func eventsForUnknownChildrenChangeNothing() {
        var machine = Self.serving()
        let before = machine.state
        #expect(machine.handle(.exited(pid: 999, .exited(1)), at: Self.at(1)) == [])
        #expect(machine.handle(.saidReady(pid: 999), at: Self.at(1)) == [])
        #expect(machine.handle(.watchdogPing(pid: 999), at: Self.at(1)) == [])
        #expect(machine.state == before)
    }
}
