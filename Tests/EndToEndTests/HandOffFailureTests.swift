import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A hand-off that goes wrong on the supervisor's side (docs/supervise.md, "Switches that
/// convert the data: stop-first"): a supervisor that never takes it, one that takes it and
/// never answers, and one killed after it took it. Each time the caller ends in one sentence
/// or in the switch made, and nothing converts the data beside a serving child.
@Suite struct HandOffFailureTests {
    /// Runs `rollbackctl rollback` on a thread of its own, so the test can act on the
    /// supervisor while the command waits for it.
    final class Rollback: @unchecked Sendable {
        private let lock = NSLock()
        private var outcome: Result<ProcessResult, Error>?
        let startedAt = Date()

        /// The command line's reason, unique: the test finds the command's process by it.
        let reason = "the supervisor misbehaves \(UUID().uuidString)"

        init(_ t: TestBundle) {
            let thread = Thread { [self] in
                let result = Result { try t.rollbackctl("rollback", "--reason", reason) }
                lock.withLock { outcome = result }
            }
            thread.start()
        }

        /// The pid of the running command (its command line, from procfs).
        func pid() -> Int32? {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap(Int32.init).first { pid in
                let line = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
                return String(decoding: line, as: UTF8.self).contains(reason)
            }
        }

        /// The command's result once it has exited, waiting up to `seconds`.
        func result(within seconds: Double) throws -> ProcessResult {
            try #require(waitUntil(seconds: seconds) { lock.withLock { outcome != nil } }, "rollbackctl rollback still waits")
            return try lock.withLock { outcome! }.get()
        }
    }

    /// A connection the serving child accepted and that sends nothing: the drain waits for its
    /// request (DrainTests), so the switch is held for supervise.drain_ms, as these tests need.
    final class HeldConnection {
        let fd: Int32

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(NotesClient.connectLoopback(fd, port: port) == 0, "connect: \(String(cString: strerror(errno)))")
            usleep(300_000)  // the serving child's acceptor takes it at once
        }

        deinit { close(fd) }
    }

    @Test func aRollbackThatAStoppedSupervisorNeverTakesChangesNothingAndSaysSo() throws {
        // A supervisor that does not take the request is not waited on beyond 15 s.
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
        #expect(rollback.stderr == "Error: The supervisor (pid \(app.pid)) did not take the switch within 15 s, so nothing was changed; check that it runs (rollbackctl status shows it), then retry.\n", "\(rollback)")
        #expect(waited >= 15 && waited < 30, "gave up after \(waited) s")
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

    @Test func aSupervisorThatTookTheSwitchAndStopsAnsweringIsReportedAfterTheWait() throws {
        // The drain holds the switch between the take and the answer for 2 s (a connection
        // waits for its request).
        let (t, port, app) = try LiveSwitchDataTests.server(["supervise.drain_ms": "2000", "supervise.grace_ms": "100"])
        defer {
            kill(app.pid, SIGCONT)
            app.stop()
        }
        let held = try HeldConnection(port: port)
        defer { withExtendedLifetime(held) {} }
        let rollback = Rollback(t)
        try #require(app.wait(upTo: 20) { app.record?.pause != nil }, "the supervisor never began the switch: \(app.stderr)")
        #expect(kill(app.pid, SIGSTOP) == 0)
        let result = try rollback.result(within: 120)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr == "Error: The supervisor (pid \(app.pid)) took the switch but did not answer within 62 s; it may still happen: see rollbackctl status and rollbackctl history, then retry if the flag is not what you wanted.\n", "\(result)")
        #expect(Date().timeIntervalSince(rollback.startedAt) >= 62)

        // It may still happen, and once the supervisor runs again it does.
        kill(app.pid, SIGCONT)
        let resumed = Date()
        #expect(app.wait(upTo: 60) { app.record?.childSlot == .previous && app.record?.childReady == true }, "\(app.stderr)")
        print("HandOffFailureTests: the supervisor stopped after it took the switch made it \(Int(Date().timeIntervalSince(resumed) * 1000)) ms after SIGCONT")
        #expect(try t.rollbackctl("status").stdout.contains("Rollback flag: set"))
    }

    @Test func aSupervisorKilledAfterItTookTheSwitchLeavesTheSwitchToTheCaller() throws {
        // A long drain: the supervisor holds the switch for 30 s before it converts anything
        // (a connection waits for its request).
        let (t, port, app) = try LiveSwitchDataTests.server(["supervise.drain_ms": "30000", "supervise.grace_ms": "100"])
        defer { app.stop() }
        let child = try #require(app.record?.childPID)
        let held = try HeldConnection(port: port)
        defer { withExtendedLifetime(held) {} }
        let rollback = Rollback(t)
        try #require(app.wait(upTo: 20) { app.record?.pause != nil }, "the supervisor never began the switch: \(app.stderr)")
        #expect(kill(app.pid, SIGKILL) == 0)
        let killedAt = Date()

        // Its child died with it; the caller converted the data itself and switched.
        let result = try rollback.result(within: 60)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Data: reverted migration step notes-v2 so that 1.1.9 can read it."), "\(result)")
        #expect(result.stdout.contains("Rolled back: the next start runs the previous slot (1.1.9)."), "\(result)")
        #expect(Date().timeIntervalSince(killedAt) < 20, "the caller waited for a supervisor that was gone")
        #expect(!isAlive(child))
        #expect(try t.rollbackctl("status").stdout.contains("Rollback flag: set"))

        // The next start of the service runs 1.1.9 on data in its format, every note there.
        let listed = try t.launcher("note", "list", environment: ["SWITCHBACK_SUPERVISE": "0"])
        #expect(listed.status == 0, "\(listed)")
        #expect(listed.stdout == "before one\nbefore two\n", "\(listed)")
    }

    @Test func aSupervisorKilledAfterItTookTheSwitchPassesItToTheOneRestartedInItsPlace() throws {
        let (t, port, first) = try LiveSwitchDataTests.server(["supervise.drain_ms": "30000", "supervise.grace_ms": "100"])
        defer { first.stop() }
        let child = try #require(first.record?.childPID)
        var held: HeldConnection? = try HeldConnection(port: port)
        let rollback = Rollback(t)
        try #require(first.wait(upTo: 20) { first.record?.pause != nil }, "the supervisor never began the switch: \(first.stderr)")
        // The command stopped, the supervisor killed and started again (as a service manager
        // would), serving 1.2.0 before the command looks again.
        var caller: Int32?
        try #require(waitUntil(seconds: 10) { caller = rollback.pid(); return caller != nil })
        let command = try #require(caller)
        #expect(kill(command, SIGSTOP) == 0)
        defer { kill(command, SIGCONT) }
        #expect(kill(first.pid, SIGKILL) == 0)
        #expect(waitUntil(seconds: 10) { !isAlive(child) })
        if held != nil { held = nil }  // closed: the new supervisor's child must not wait for it
        try t.setManifestSetting("supervise.drain_ms", "100")
        let second = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"])
        defer { second.stop() }
        try #require(second.wait(upTo: 30) { second.record?.childReady == true && NotesClient.get(port: port, path: "/notes").version == LiveSwitchDataTests.newer }, "\(second.stderr)")
        kill(command, SIGCONT)

        // The new supervisor took it: stop-first, its child converted back, the command's usual output.
        let result = try rollback.result(within: 120)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Data: reverted migration step notes-v2 so that 1.1.9 can read it."), "\(result)")
        #expect(result.stdout.contains("Rolled back: the next start runs the previous slot (1.1.9)."), "\(result)")
        #expect(second.wait(upTo: 30) { second.record?.childSlot == .previous && second.record?.childReady == true }, "\(second.stderr)")
        #expect(second.stderr.contains("stop-first: the data (reader floor 1.2.0) must be converted back for 1.1.9"), "\(second.stderr)")
        let answer = NotesClient.get(port: port, path: "/notes")
        #expect(answer.version == LiveSwitchDataTests.older && answer.format == "1", "\(answer)")
        #expect(Set(answer.body.split(separator: "\n").map(String.init)).isSuperset(of: ["before one", "before two"]), "\(answer)")
    }
}
