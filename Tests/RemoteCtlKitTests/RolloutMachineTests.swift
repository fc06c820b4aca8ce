@testable import RemoteCtlKit
import SwitchbackCore
import Testing

/// Every transition of the rollout's state machine, without files, keys or clocks.
@Suite struct RolloutMachineTests {
    static let plan = RolloutPlan(version: "1.3.0", steps: [5, 50, 100], pauses: [60, 60, 60], approvalSteps: [50],
                                  expiresInSeconds: 3600, appID: "app", previousVersion: "1.2.0", analysis: [:])

    /// Publishes what `action` asks with `serial`, as the driver does; returns the next action.
    static func publish(_ machine: inout RolloutMachine, _ action: RolloutMachine.Action, serial: UInt64, at now: Int64 = 100) -> RolloutMachine.Action {
        guard case .publish = action else {
            Issue.record("expected a publication, got \(action)")
            return action
        }
        machine.willPublish(serial: serial, sha256: "sha\(serial)", now: now)
        #expect(machine.state.phase == .publishing || machine.state.phase == .rollingBack)
        return machine.didPublish(now: now)
    }

    @Test func aGoodRolloutPublishesEachStepOnceAndWaitsAtTheApprovalStep() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        let first = machine.resume(onDisk: nil, abort: false, now: 100)
        #expect(first == .publish(.init(decision: .current, percent: 5, reason: "Rollout of 1.3.0: step 1 of 3 (5%), run the current slot.")))
        #expect(Self.publish(&machine, first, serial: 10) == .analyse(step: 1, percent: 5, seconds: 60, resumed: false))
        #expect(machine.state.phase == .analysing && machine.state.records[1]?.serial == 10)
        let gate = machine.judged(.passed("rollbacks: result[0] == 0 is true (0)"), now: 160)
        #expect(gate == .wait("Waiting for approval: step 2 of 3 (50%) is published only once an operator approves it; run the same command with --approve to publish it, or with --abort to roll back."))
        #expect(machine.state.phase == .awaitingApproval && machine.state.step == 2)
        #expect(machine.state.records[1]?.result == "passed: rollbacks: result[0] == 0 is true (0)")

        // The next run, with --approve: step 2 is published, then step 3 without a gate.
        var next = RolloutMachine(plan: Self.plan, state: machine.state, approve: true)
        let second = next.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 200)
        #expect(second == .publish(.init(decision: .current, percent: 50, reason: "Rollout of 1.3.0: step 2 of 3 (50%), run the current slot.")))
        #expect(next.takeNotes() == ["Step 2 of 3 (50%): approved by the operator (--approve)."])
        #expect(Self.publish(&next, second, serial: 11) == .analyse(step: 2, percent: 50, seconds: 60, resumed: false))
        let third = next.judged(.passed("fine"), now: 260)
        #expect(third == .publish(.init(decision: .current, percent: 100, reason: "Rollout of 1.3.0: step 3 of 3 (100%), run the current slot.")))
        #expect(Self.publish(&next, third, serial: 12) == .analyse(step: 3, percent: 100, seconds: 60, resumed: false))
        #expect(next.judged(.passed("fine"), now: 320) == .finish("The rollout of 1.3.0 is complete: its last directive (serial 12) was published for every install (100%); its last pause measured: passed: fine."))
        #expect(next.state.phase == .completed)

        // Run again: nothing more.
        var again = RolloutMachine(plan: Self.plan, state: next.state, approve: false)
        #expect(again.resume(onDisk: .init(serial: 12, sha256: "sha12"), abort: false, now: 400)
            == .finish("The rollout of 1.3.0 is already complete: its last directive (serial 12) was published for every install (100%); its last pause measured: passed: fine."))
    }

    /// `--promote-full` at the approval gate: step 3 (100%) is published at once, step 2 and
    /// both pauses skipped, and the rollout completes unanalysed (Argo's promote --full).
    @Test func promoteFullPublishesTheLastStepAndCompletesWithoutAPause() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        let first = machine.resume(onDisk: nil, abort: false, now: 100)
        _ = Self.publish(&machine, first, serial: 10)
        _ = machine.judged(.passed("fine"), now: 160)
        #expect(machine.state.phase == .awaitingApproval)

        var promoted = RolloutMachine(plan: Self.plan, state: machine.state, approve: false, promoteFull: true)
        let last = promoted.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 200)
        #expect(last == .publish(.init(decision: .current, percent: 100, reason: "Rollout of 1.3.0: step 3 of 3 (100%), run the current slot.")))
        #expect(promoted.takeNotes() == ["Promoted by the operator (--promote-full): skipping 1 step and their pauses, publishing the last step now, unanalysed."])
        #expect(Self.publish(&promoted, last, serial: 11)
            == .finish("The rollout of 1.3.0 is complete: its last directive (serial 11) was published for every install (100%); its last pause measured: promoted to 100% by the operator (--promote-full): not analysed."))
        #expect(promoted.state.phase == .completed && promoted.state.records[2] == nil)

        // Interrupted in the last step's pause: nothing is published again.
        var paused = RolloutMachine(plan: Self.plan, state: nil, approve: true)
        var action = paused.resume(onDisk: nil, abort: false, now: 100)
        for serial in 20...22 {
            action = Self.publish(&paused, action, serial: UInt64(serial))
            if serial < 22 { action = paused.judged(.passed("fine"), now: 100) }
        }
        #expect(paused.state.phase == .analysing && paused.state.step == 3)
        var resumed = RolloutMachine(plan: Self.plan, state: paused.state, approve: false, promoteFull: true)
        guard case .finish = resumed.resume(onDisk: .init(serial: 22, sha256: "sha22"), abort: false, now: 300) else {
            Issue.record("the last step is published already: --promote-full finishes")
            return
        }
        #expect(resumed.state.phase == .completed && resumed.state.serial == 22)
    }

    @Test func aFailedAnalysisPublishesTheRollbackForEveryInstallAndFails() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        let rollback = machine.judged(.failed("rollbacks: result[0] == 0 is false (4)"), now: 130)
        #expect(rollback == .publish(.init(decision: .previous, percent: 100,
                                           reason: "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): rollbacks: result[0] == 0 is false (4)")))
        #expect(machine.state.phase == .rollingBack && machine.state.rollbackCause == .failed)
        let end = Self.publish(&machine, rollback, serial: 11)
        #expect(end == .rolledBack("The rollout of 1.3.0 stopped at step 1 of 3 (5%) and was rolled back for every install (directive serial 11): rollbacks: result[0] == 0 is false (4)."))
        #expect(machine.state.phase == .rolledBack)
        var again = RolloutMachine(plan: Self.plan, state: machine.state, approve: true)
        guard case .rolledBack(let sentence) = again.resume(onDisk: .init(serial: 11, sha256: "sha11"), abort: false, now: 200) else {
            Issue.record("a rolled-back rollout must not go on")
            return
        }
        #expect(sentence.hasPrefix("The rollout of 1.3.0 was already rolled back (directive serial 11)"))
    }

    @Test func anInconclusiveAnalysisWaitsForTheOperator() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        let wait = machine.judged(.inconclusive("rollbacks: Prometheus at http://127.0.0.1:9 could not be reached (connection refused)"), now: 160)
        #expect(wait == .wait("The analysis of step 1 of 3 (5%) was inconclusive (rollbacks: Prometheus at http://127.0.0.1:9 could not be reached (connection refused)); run the same command with --approve to go on, or with --abort to roll back."))
        #expect(machine.state.phase == .inconclusive)
        // Without a flag it waits again; --approve goes on to the next step (an approval step,
        // which the same --approve does not open: one approval, one gate).
        var plain = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        guard case .wait = plain.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 200) else {
            Issue.record("must wait")
            return
        }
        var approved = RolloutMachine(plan: Self.plan, state: machine.state, approve: true)
        guard case .wait(let sentence) = approved.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 200) else {
            Issue.record("the approval step must wait for its own approval")
            return
        }
        #expect(sentence.hasPrefix("Waiting for approval: step 2 of 3 (50%)"))
        // --abort rolls back.
        var aborted = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        #expect(aborted.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: true, now: 200)
            == .publish(.init(decision: .previous, percent: 100, reason: "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): aborted by the operator (--abort) after an inconclusive analysis")))
        #expect(Self.publish(&aborted, .publish(.init(decision: .previous, percent: 100, reason: "")), serial: 11)
            == .finish("Rolled back 1.3.0 for every install (directive serial 11): aborted by the operator (--abort) after an inconclusive analysis."))
    }

    @Test func aHeldAnalysisWaitsForTheOperatorUnderItsOwnWord() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        let sentence = "latency: result[0] < 0.25 is false (0.41) (on_failure=hold)"
        #expect(machine.judged(.held(sentence), now: 160)
            == .wait("The analysis of step 1 of 3 (5%) was held by a check that holds (on_failure=hold) (\(sentence)); run the same command with --approve to go on, or with --abort to roll back."))
        #expect(machine.state.phase == .held && machine.state.records[1]?.result == "held: \(sentence)")
        var plain = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        guard case .wait(let again) = plain.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 200) else {
            Issue.record("a held step must wait")
            return
        }
        #expect(again.contains("held by a check that holds"))
        var aborted = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        #expect(aborted.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: true, now: 200)
            == .publish(.init(decision: .previous, percent: 100, reason: "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): aborted by the operator (--abort) after a held analysis")))
    }

    @Test func aDryRunsVerdictGoesOnAndSaysWhatItWouldHaveDone() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        let sentence = "would have rolled back: rollbacks: result[0] == 0 is false (4)"
        guard case .wait(let gate) = machine.judged(.wouldRollBack(sentence), now: 160) else {
            Issue.record("a dry run's failure goes on to the next step (its approval gate)")
            return
        }
        #expect(gate.hasPrefix("Waiting for approval: step 2 of 3 (50%)"))
        #expect(machine.takeNotes() == ["Step 1 of 3 (5%): dry run (analysis.dry_run), \(sentence); going on."])
        #expect(machine.state.records[1]?.result == "would_roll_back: \(sentence)")
    }

    @Test func approvedInAdvanceAnInconclusiveStepGoesOn() {
        let plan = RolloutPlan(version: "1.3.0", steps: [5, 100], pauses: [60, 60], approvalSteps: [], expiresInSeconds: 3600,
                               appID: "app", previousVersion: nil, analysis: [:])
        var machine = RolloutMachine(plan: plan, state: nil, approve: true)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        #expect(machine.judged(.inconclusive("no data"), now: 160)
            == .publish(.init(decision: .current, percent: 100, reason: "Rollout of 1.3.0: step 2 of 2 (100%), run the current slot.")))
    }

    /// Killed after the state said "publishing" and the file reached the disk: the re-run
    /// sees the same bytes and does not publish again.
    @Test func aPublicationThatReachedTheDiskIsNotRepeated() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = machine.resume(onDisk: nil, abort: false, now: 100)
        machine.willPublish(serial: 10, sha256: "sha10", now: 100)
        let killed = machine.state
        var resumed = RolloutMachine(plan: Self.plan, state: killed, approve: false)
        #expect(resumed.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 150)
            == .analyse(step: 1, percent: 5, seconds: 60, resumed: true))
        #expect(resumed.takeNotes() == ["The directive of step 1 of 3 (5%) (serial 10) was written before the last run stopped; not publishing it again."])
        #expect(resumed.state.phase == .analysing && resumed.state.records[1]?.serial == 10)
    }

    /// Killed after the state said "publishing" but before the file was replaced: the re-run
    /// publishes that step with the same serial.
    @Test func aPublicationThatNeverReachedTheDiskIsMadeWithTheSameSerial() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = machine.resume(onDisk: nil, abort: false, now: 100)
        machine.willPublish(serial: 10, sha256: "sha10", now: 100)
        var resumed = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        #expect(resumed.resume(onDisk: .init(serial: 3, sha256: "older"), abort: false, now: 150)
            == .publish(.init(decision: .current, percent: 5, reason: "Rollout of 1.3.0: step 1 of 3 (5%), run the current slot.", serial: 10)))
        var rollingBack = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        _ = rollingBack.judged(.failed("bad"), now: 120)
        rollingBack.willPublish(serial: 11, sha256: "sha11", now: 120)
        var again = RolloutMachine(plan: Self.plan, state: rollingBack.state, approve: false)
        #expect(again.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 150)
            == .publish(.init(decision: .previous, percent: 100, reason: "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): bad", serial: 11)))
    }

    /// A pause interrupted by a kill runs again in full: measurements made before the kill
    /// are gone, and a window that ended unwatched proves nothing.
    @Test func anInterruptedPauseRunsAgainWithoutANewPublication() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        var resumed = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        #expect(resumed.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 130)
            == .analyse(step: 1, percent: 5, seconds: 60, resumed: true))
    }

    @Test func aDirectiveSomeoneElsePublishedStopsTheRollout() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        var resumed = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        #expect(resumed.resume(onDisk: .init(serial: 40, sha256: "theirs"), abort: false, now: 130)
            == .fail("The directive file holds a directive with serial 40, not the directive of step 1 of 3 (5%) this rollout published (serial 10): someone else published over it; find out who, then run the same command with --abort to roll back, or start a new rollout with another --state file."))
        var missing = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        guard case .fail(let sentence) = missing.resume(onDisk: nil, abort: false, now: 130) else {
            Issue.record("a missing directive file must stop the rollout")
            return
        }
        #expect(sentence.hasPrefix("The directive file holds nothing, not the directive of step 1 of 3 (5%)"))
    }

    @Test func abortPublishesTheRollbackFromAFreshStart() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        let action = machine.resume(onDisk: nil, abort: true, now: 100)
        #expect(action == .publish(.init(decision: .previous, percent: 100, reason: "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): aborted by the operator (--abort)")))
        #expect(Self.publish(&machine, action, serial: 5) == .finish("Rolled back 1.3.0 for every install (directive serial 5): aborted by the operator (--abort)."))
    }

    @Test func theStateFileRoundTrips() throws {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        _ = machine.judged(.failed("a\nb"), now: 130)
        let bytes = machine.state.serialized()
        #expect(try RolloutState.parse(bytes, file: "s") == machine.state)
        #expect(throws: RolloutStateError("The rollout state file s has format 2; it is not one this version wrote: move it away to start the rollout afresh, or restore the right file.")) {
            try RolloutState.parse(Array("format=2\n".utf8), file: "s")
        }
    }

    /// The pause ends with the directive file as this rollout left it: the verdict is judged.
    @Test func aPauseThatEndsWithItsOwnDirectiveIsJudged() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        let saved = machine.state
        #expect(machine.pauseEnded(.passed("fine"), onDisk: .init(serial: 10, sha256: "sha10"), saved: saved, now: 160)
            == .wait("Waiting for approval: step 2 of 3 (50%) is published only once an operator approves it; run the same command with --approve to publish it, or with --abort to roll back."))
    }

    /// An `--abort` from another process during the pause: its rollback is on disk and its
    /// state says so; the running rollout is superseded, takes that state as it is, and
    /// publishes nothing (not the next step, not even the rollback a failed verdict asks for).
    @Test func anAbortFromAnotherProcessDuringThePauseSupersedesTheRun() {
        for verdict in [AnalysisVerdict.passed("fine"), .failed("bad"), .inconclusive("no data")] {
            var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
            _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
            // The other process: the same state, --abort, its rollback written.
            var aborter = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
            _ = Self.publish(&aborter, aborter.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: true, now: 120), serial: 11)
            #expect(aborter.state.phase == .rolledBack)
            let action = machine.pauseEnded(verdict, onDisk: .init(serial: 11, sha256: "sha11"), saved: aborter.state, now: 160)
            #expect(action == .superseded("The rollout of 1.3.0 was aborted from another process (--abort) during the pause of step 1 of 3 (5%): its rollback (directive serial 11) stays published, and this run publishes nothing more."))
            #expect(machine.state == aborter.state, "the aborter's state stands")
        }
    }

    /// The aborter was killed after its state said rolling back but before its rollback was
    /// written: the run still stops, and says to run --abort again.
    @Test func anAbortWhoseRollbackNeverReachedTheDiskStillSupersedesTheRun() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        var aborter = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        _ = aborter.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: true, now: 120)
        aborter.willPublish(serial: 11, sha256: "sha11", now: 120)
        #expect(machine.pauseEnded(.passed("fine"), onDisk: .init(serial: 10, sha256: "sha10"), saved: aborter.state, now: 160)
            == .superseded("The rollout of 1.3.0 was aborted from another process (--abort) during the pause of step 1 of 3 (5%), but its rollback is not on disk: that run stopped before it was written; this run publishes nothing: run the same command with --abort to publish it."))
        // Run again with --abort: the rollback, with the serial the aborter signed.
        var again = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        #expect(again.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: true, now: 200)
            == .publish(.init(decision: .previous, percent: 100, reason: "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): aborted by the operator (--abort)", serial: 11)))
    }

    /// A directive published by hand during the pause (the state knows nothing of it): the
    /// run stops without publishing over it, and a later run refuses as before.
    @Test func aDirectivePublishedByHandDuringThePauseSupersedesTheRun() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        let before = machine.state
        #expect(machine.pauseEnded(.passed("fine"), onDisk: .init(serial: 50, sha256: "theirs"), saved: before, now: 160)
            == .superseded("The directive file was replaced during the pause of step 1 of 3 (5%): it holds a directive with serial 50, not this rollout's (serial 10), so someone published by hand; this run publishes nothing more over it or after it: find out who, then run the same command with --abort to roll back, or start a new rollout with another --state file."))
        #expect(machine.state == before, "nothing judged, nothing advanced")
        var again = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        guard case .fail = again.resume(onDisk: .init(serial: 50, sha256: "theirs"), abort: false, now: 200) else {
            Issue.record("a later run must refuse the foreign directive")
            return
        }
    }

    /// A serial no time-based serial can follow: refused in the progress file and in the
    /// directive file, before anything is published.
    @Test func aSerialAboveAnyTimeIsRefused() {
        var text = RolloutState.fresh(Self.plan)
        text.serial = UInt64(Int64.max) - 1
        text.phase = .analysing
        #expect(throws: RolloutStateError("The rollout state file s has serial 9223372036854775806, above any time in seconds (9999999999 is in the year 2286), so no time-based serial could follow it and every install that took the next one would refuse all later ones as replays; it is not one this version wrote: move it away to start the rollout afresh, or restore the right file.")) {
            try RolloutState.parse(text.serialized(), file: "s")
        }
        text.serial = RolloutState.highestFollowableSerial
        #expect((try? RolloutState.parse(text.serialized(), file: "s"))?.serial == 9_999_999_999)

        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        #expect(machine.resume(onDisk: .init(serial: UInt64(Int64.max), sha256: "theirs"), abort: false, now: 100)
            == .fail("The directive file holds serial 9223372036854775807, above any time in seconds (9999999999 is in the year 2286): a rollout that followed it would publish serials every install accepts, after which every time-based serial (sign's, the next rollout's) is refused as a replay; publish a directive with a time-based serial (rollbackctl-remote sign without --serial) and run the rollout again."))
        var aborting = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        guard case .fail = aborting.resume(onDisk: .init(serial: UInt64.max, sha256: "theirs"), abort: true, now: 100) else {
            Issue.record("--abort must not follow it either")
            return
        }
    }

    /// Killed after a rollback was decided and written down, before it was signed: the state
    /// holds the last step's serial and hash, which are on disk; the next run publishes the
    /// rollback (it did not take the step's directive for the rollback, as it once did).
    @Test func aRollbackDecidedButNotSignedIsPublishedByTheNextRun() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        _ = machine.judged(.failed("bad"), now: 130)
        #expect(machine.state.phase == .rollingBack && !machine.state.isRollbackSigned)
        var resumed = RolloutMachine(plan: Self.plan, state: machine.state, approve: false)
        #expect(resumed.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 150)
            == .publish(.init(decision: .previous, percent: 100, reason: "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): bad")))
        // The same for an --abort of a fresh rollout (serial 0) over a held-back directive.
        var fresh = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = fresh.resume(onDisk: .init(serial: 1, sha256: "held"), abort: true, now: 100)
        var again = RolloutMachine(plan: Self.plan, state: fresh.state, approve: false)
        #expect(again.resume(onDisk: .init(serial: 1, sha256: "held"), abort: true, now: 150)
            == .publish(.init(decision: .previous, percent: 100, reason: "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): aborted by the operator (--abort)")))
    }
}
