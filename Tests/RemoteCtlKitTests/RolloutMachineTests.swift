@testable import RemoteCtlKit
import Testing

/// Every transition of the rollout's state machine, without files, keys or clocks.
@Suite struct RolloutMachineTests {
    static let plan = RolloutPlan(version: "1.3.0", steps: [5, 50, 100], pauseSeconds: 60, approvalSteps: [50],
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
        let gate = machine.judged(.successful("rollbacks: result[0] == 0 is true (0)"), now: 160)
        #expect(gate == .wait("Waiting for approval: step 2 of 3 (50%) is published only once an operator approves it; run the same command with --approve to publish it, or with --abort to roll back."))
        #expect(machine.state.phase == .awaitingApproval && machine.state.step == 2)
        #expect(machine.state.records[1]?.result == "successful: rollbacks: result[0] == 0 is true (0)")

        // The next run, with --approve: step 2 is published, then step 3 without a gate.
        var next = RolloutMachine(plan: Self.plan, state: machine.state, approve: true)
        let second = next.resume(onDisk: .init(serial: 10, sha256: "sha10"), abort: false, now: 200)
        #expect(second == .publish(.init(decision: .current, percent: 50, reason: "Rollout of 1.3.0: step 2 of 3 (50%), run the current slot.")))
        #expect(next.takeNotes() == ["Step 2 of 3 (50%): approved by the operator (--approve)."])
        #expect(Self.publish(&next, second, serial: 11) == .analyse(step: 2, percent: 50, seconds: 60, resumed: false))
        let third = next.judged(.successful("fine"), now: 260)
        #expect(third == .publish(.init(decision: .current, percent: 100, reason: "Rollout of 1.3.0: step 3 of 3 (100%), run the current slot.")))
        #expect(Self.publish(&next, third, serial: 12) == .analyse(step: 3, percent: 100, seconds: 60, resumed: false))
        #expect(next.judged(.successful("fine"), now: 320) == .finish("The rollout of 1.3.0 is complete: 100% of installs run it (directive serial 12)."))
        #expect(next.state.phase == .completed)

        // Run again: nothing more.
        var again = RolloutMachine(plan: Self.plan, state: next.state, approve: false)
        #expect(again.resume(onDisk: .init(serial: 12, sha256: "sha12"), abort: false, now: 400)
            == .finish("The rollout of 1.3.0 is already complete: 100% of installs run it (directive serial 12)."))
    }

    @Test func aFailedAnalysisPublishesTheRollbackForEveryInstallAndFails() {
        var machine = RolloutMachine(plan: Self.plan, state: nil, approve: false)
        _ = Self.publish(&machine, machine.resume(onDisk: nil, abort: false, now: 100), serial: 10)
        let rollback = machine.judged(.failed("rollbacks: result[0] == 0 is false (4)"), now: 130)
        #expect(rollback == .publish(.init(decision: .previous, percent: 100,
                                           reason: "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): rollbacks: result[0] == 0 is false (4)")))
        #expect(machine.state.phase == .rollingBack && machine.state.rollbackCause == .failed)
        let end = Self.publish(&machine, rollback, serial: 11)
        #expect(end == .fail("The rollout of 1.3.0 stopped at step 1 of 3 (5%) and was rolled back for every install (directive serial 11): rollbacks: result[0] == 0 is false (4)."))
        #expect(machine.state.phase == .rolledBack)
        var again = RolloutMachine(plan: Self.plan, state: machine.state, approve: true)
        guard case .fail(let sentence) = again.resume(onDisk: .init(serial: 11, sha256: "sha11"), abort: false, now: 200) else {
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

    @Test func approvedInAdvanceAnInconclusiveStepGoesOn() {
        let plan = RolloutPlan(version: "1.3.0", steps: [5, 100], pauseSeconds: 60, approvalSteps: [], expiresInSeconds: 3600,
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
}
