@testable import SwitchbackCore
import Testing

/// The hand-off files of a stop-first switch (`switch.request`, `switch.answer`) and the
/// supervisor record's new keys: what is written reads back the same.
@Suite struct SwitchRequestTests {
    @Test func aRequestReadsBackTheSame() throws {
        let request = SwitchRequest(id: "42-1795326000", source: .remote, reason: "1.2.0 loses\nnotes", force: true,
                                    command: "rollbackctl rollback", fromBuild: String(repeating: "a", count: 64))
        #expect(try SwitchRequest.parse(request.serialized(), path: "r") == request)
    }

    @Test func aTornRequestIsRefusedWithASentence() {
        #expect(throws: SwitchbackError.self) { try SwitchRequest.parse(Array("id=1\nsource=cli\n".utf8), path: "/s/switch.request") }
        do { _ = try SwitchRequest.parse(Array("id=1\n".utf8), path: "/s/switch.request") } catch {
            #expect(error.code == .stateInvalid)
            #expect(error.message == "The switch request /s/switch.request is truncated or not a Switchback file; it was removed: run the command again.")
        }
    }

    @Test func anAnswerCarriesTheDowngradeAndTheOutcome() throws {
        let outcome = DataDowngrade.Outcome(status: .done, undone: [.init(method: .revert, step: "notes-v2", archive: nil),
                                                                    .init(method: .restore, step: "a b", archive: "/data/archive 1")],
                                            readerFloor: "", message: nil)
        let answer = SwitchRequest.Answer(id: "42-1", status: "switched", warning: "careful", changed: true, downgrade: outcome)
        #expect(try SwitchRequest.Answer.parse(answer.serialized(), path: "a") == answer)
        let refused = SwitchRequest.Answer(id: "42-2", status: "refused", message: "No.", downgrade: .init(status: .refused, message: "cannot"))
        #expect(try SwitchRequest.Answer.parse(refused.serialized(), path: "a") == refused)
    }

    @Test func theSupervisorRecordKeepsThePauseAndTheLastSwitch() throws {
        var last = SupervisorRecord.LastSwitch(path: "stop-first", from: .current, to: .previous, fromVersion: "1.2.0", toVersion: "1.1.9",
                                               why: "the data (reader floor 1.2.0) must be converted back for 1.1.9", pausedMilliseconds: 412, at: 1_795_326_000)
        last.drainedAtMilliseconds = 1_795_325_999_588
        last.stoppedAtMilliseconds = 1_795_325_999_700
        last.targetStartedAtMilliseconds = 1_795_325_999_800
        last.readyAtMilliseconds = 1_795_326_000_000
        var pause = last
        pause.pausedMilliseconds = nil
        let record = SupervisorRecord(pid: 10, startedAt: 1_795_325_000, childPID: 11, childSlot: .previous, childStartedAt: 1_795_325_999,
                                      restarts: 0, pause: pause, lastSwitch: last)
        #expect(try SupervisorRecord.parse(record.serialized(), path: "s") == record)
        #expect(last.sentence == "stop-first, 1.2.0 → 1.1.9: the data (reader floor 1.2.0) must be converted back for 1.1.9; paused 412 ms")
        // A record from before the stop-first switch has neither.
        let old = try SupervisorRecord.parse(Array("pid=10\nstarted_at=1795325000\n".utf8), path: "s")
        #expect(old.pause == nil && old.lastSwitch == nil)
    }
}
