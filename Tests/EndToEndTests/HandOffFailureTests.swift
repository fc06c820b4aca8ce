import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A hand-off that the supervisor never takes (docs/supervise.md, "Switches that convert the
/// data: stop-first"): the caller gives up after its wait, says so in one sentence, exits 1,
/// and nothing was changed: not the flag, not the data, not the serving child.
@Suite struct HandOffFailureTests {
    @Test func aRollbackThatAStoppedSupervisorNeverTakesChangesNothingAndSaysSo() throws {
        // Drain and grace short: the caller waits 60 s plus both.
        let (t, port, app) = try LiveSwitchDataTests.server(["supervise.drain_ms": "100", "supervise.grace_ms": "100"])
        defer {
            kill(app.pid, SIGCONT)
            app.stop()
        }
        let child = try #require(app.record?.childPID)
        #expect(kill(app.pid, SIGSTOP) == 0)
        let started = Date()
        let rollback = try t.rollbackctl("rollback", "--reason", "while the supervisor is stopped")
        let waited = Date().timeIntervalSince(started)
        #expect(rollback.status == 1, "\(rollback)")
        #expect(rollback.stderr == "Error: The supervisor (pid \(app.pid)) did not take the switch within 60 s, so nothing was changed; check that it runs (rollbackctl status shows it), then retry.\n", "\(rollback)")
        #expect(waited >= 60, "gave up after \(waited) s")
        #expect(!FileManager.default.fileExists(atPath: t.state + "/switch.request"), "the request was withdrawn")

        // Nothing changed: the flag, the data's format, the child serving it.
        kill(app.pid, SIGCONT)
        let status = try t.rollbackctl("status")
        #expect(status.stdout.contains("Rollback flag: clear"), "\(status)")
        let answer = NotesClient.get(port: port, path: "/notes")
        #expect(answer.version == LiveSwitchDataTests.newer && answer.format == "2", "\(answer)")
        #expect(app.record?.childPID == child)
        #expect(try !t.history().contains { $0.kind == "revert" || $0.kind == "switch" })
    }
}
