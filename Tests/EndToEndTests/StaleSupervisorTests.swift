import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A supervisor killed with `kill -9` leaves its record (docs/supervise.md, "Switches that
/// convert the data: stop-first"). When another user's process then has its pid, a rollback
/// that converts the data must not wait for it: the record is stale (`SupervisorIdentity`),
/// the command says so in one sentence and switches itself at once. And a supervisor killed
/// in the middle of a conversion leaves no orphan converting the data behind the command
/// that takes the switch over (`ParentDeath`).
@Suite(.serialized) struct StaleSupervisorTests {
    /// Puts a process of user `uid` running `program` at `pid`, the pid of a supervisor killed
    /// (and reaped) just before: as root, `/proc/sys/kernel/ns_last_pid` is set to `pid - 1`
    /// right before the spawn, so the kernel hands out `pid` next (what a local user gets by
    /// forking in a loop, or ordinary pid reuse, gets slower). Another process of the host
    /// may take the pid between the two: retried. Nil when every try lost the race.
    static func squat(_ pid: Int32, uid: uid_t, _ program: [String], environment: [String: String] = ["PATH": "/usr/bin:/bin"],
                      stderr: String = "/dev/null") throws -> SpawnedProcess? {
        for _ in 0..<200 {
            let fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY)
            guard fd >= 0 else { return nil }
            let text = Array(String(pid - 1).utf8)
            let written = write(fd, text, text.count)
            close(fd)
            guard written == text.count else { return nil }
            let process = try SpawnedProcess("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"] + program,
                                             environment: environment, stderr: stderr)
            if process.pid == pid {
                // setpriv changes the user, then execs the program: until it has, the pid runs
                // setpriv as root, which is not the process the attack puts there.
                let program = FileSystem.resolved(program[0])
                let exec = waitUntil(seconds: 10) { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == program }
                if exec { return process }
            }
            kill(process.pid, SIGKILL)
            process.wait()
        }
        return nil
    }

    /// The served supervisor killed with SIGKILL and reaped (its child dies with it): its
    /// record stays, naming a pid that is free.
    static func killSupervisor(_ app: SupervisedLauncher) throws -> Int32 {
        let child = try #require(app.record?.childPID)
        let pid = app.pid
        app.stop()
        #expect(waitUntil(seconds: 10) { !isAlive(child) })
        let record = try String(contentsOfFile: app.t.state + "/supervisor", encoding: .utf8)
        #expect(record.contains("pid=\(pid)\n"), "the record stays after kill -9: \(record)")
        return pid
    }

    /// The rollback switches by itself within 5 s, says why the record is ignored, and `status`
    /// names no supervisor.
    static func expectRollbackIgnores(_ t: TestBundle, stalePID pid: Int32, clause: String) throws {
        let started = Date()
        let rollback = try t.rollbackctl("rollback", "--reason", "a stale supervisor record")
        let took = Date().timeIntervalSince(started)
        print("StaleSupervisorTests: rollback with the pid of a stale record taken (\(clause)) took \(Int(took * 1000)) ms")
        #expect(rollback.status == 0, "\(rollback)")
        #expect(took < 5, "the rollback waited \(took) s")
        #expect(rollback.stderr.contains("Note: The supervisor record names pid \(pid), which is not this install's supervisor (\(clause)); ignoring it.\n"),
                "\(rollback)")
        #expect(rollback.stdout.contains("Data: reverted migration step notes-v2 so that 1.1.9 can read it."), "\(rollback)")
        #expect(rollback.stdout.contains("Rolled back: the next start runs the previous slot (1.1.9)."), "\(rollback)")
        #expect(try t.status().supervisor == nil)
        let status = try t.rollbackctl("status")
        #expect(!status.stdout.contains("Supervisor:"), "\(status)")
        #expect(status.stdout.contains("Rollback flag: set"), "\(status)")
        let history = try t.history()
        #expect(history.contains { $0.kind == "revert" }, "\(history)")
        // The next start runs 1.1.9 on data in its format, every note there.
        let listed = try t.launcher("note", "list", environment: ["SWITCHBACK_SUPERVISE": "0"])
        #expect(listed.status == 0 && listed.stdout == "before one\nbefore two\n", "\(listed)")
    }

    /// (a) A plain program of another user at the pid. The pid is taken through
    /// `ns_last_pid`, not written into the record: the record is the killed supervisor's own.
    @Test(.enabled(if: geteuid() == 0, "needs root to run a process as a second user at a chosen pid"))
    func aStaleRecordWhosePidAnotherUsersProgramTookDoesNotBlockARollback() throws {
        let other = try SecondUser.uid()
        let (t, _, app) = try LiveSwitchDataTests.server()
        defer { app.stop() }
        let pid = try Self.killSupervisor(app)
        let squatter = try #require(try Self.squat(pid, uid: other, ["/bin/sleep", "600"]), "could not get pid \(pid) back")
        defer { kill(squatter.pid, SIGKILL); squatter.wait() }
        #expect(isAlive(pid))
        try Self.expectRollbackIgnores(t, stalePID: pid, clause: "it belongs to uid \(other), the record to uid 0")
        #expect(isAlive(squatter.pid), "the squatter was left alone")
        // promote and abort ask the same question, and say the same sentence first.
        for command in ["promote", "abort"] {
            let result = try t.rollbackctl(command)
            #expect(result.status == 1, "\(result)")
            #expect(result.stderr.hasPrefix("Error: The supervisor record names pid \(pid), which is not this install's supervisor (it belongs to uid \(other), the record to uid 0); ignoring it. No supervisor runs for the state directory "), "\(result)")
        }
    }

    /// (b) The bundle's own launcher, world-executable, run by another user with its own state
    /// directory as a supervisor of its own: the old rule (the executable's path) took it for
    /// this install's supervisor.
    @Test(.enabled(if: geteuid() == 0, "needs root to run a process as a second user at a chosen pid"))
    func aStaleRecordWhosePidTheBundlesOwnLauncherOfAnotherUserTookDoesNotBlockARollback() throws {
        let other = try SecondUser.uid()
        let (t, port, app) = try LiveSwitchDataTests.server()
        defer { app.stop() }
        try shell("chmod", "755", t.directory)
        let otherState = t.directory + "/other-state"
        try shell("mkdir", "-m", "700", otherState)
        try shell("chown", "\(other):\(other)", otherState)
        let pid = try Self.killSupervisor(app)
        // The manifest's declared address, free since the supervisor died.
        let log = t.directory + "/other.err"
        let squatter = try #require(try Self.squat(pid, uid: other, [t.bundle + "/bin/launcher", "serve", "--http", "127.0.0.1:\(port)"],
                                                   environment: ["PATH": "/usr/bin:/bin", "SWITCHBACK_STATE_DIR": otherState,
                                                                 "SWITCHBACK_SUPERVISE": "1", "TMPDIR": otherState],
                                                   stderr: log), "could not get pid \(pid) back")
        defer { kill(squatter.pid, SIGKILL); squatter.wait() }
        #expect(waitUntil(seconds: 30) { NotesClient.get(port: port, path: "/notes").version == LiveSwitchDataTests.newer },
                "the other user's launcher serves: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == FileSystem.resolved(t.bundle + "/bin/launcher"))
        try Self.expectRollbackIgnores(t, stalePID: pid, clause: "it belongs to uid \(other), the record to uid 0")
        #expect(isAlive(squatter.pid), "the squatter was left alone")
    }

    /// The same user's process at the pid (no uid to tell it apart): the start tick does.
    /// Here the record's pid is rewritten to a fresh process of the same bundle's launcher,
    /// the one case `ns_last_pid` is not needed for.
    @Test func aRecordWhosePidIsALaterLauncherOfTheSameUserIsStaleByItsStartTime() throws {
        let (t, _, app) = try LiveSwitchDataTests.server()
        defer { app.stop() }
        let pid = try Self.killSupervisor(app)
        let other = try SpawnedProcess(t.bundle + "/bin/launcher", ["serve", "--http", "127.0.0.1:\(try unusedLocalPort())"],
                                       environment: ["PATH": "/usr/bin:/bin", "SWITCHBACK_STATE_DIR": t.directory + "/later-state",
                                                     "SWITCHBACK_SUPERVISE": "0"])
        defer { kill(other.pid, SIGKILL); other.wait() }
        let path = t.state + "/supervisor"
        let record = try String(contentsOfFile: path, encoding: .utf8)
        try record.replacingOccurrences(of: "pid=\(pid)\n", with: "pid=\(other.pid)\n").write(toFile: path, atomically: true, encoding: .utf8)
        let started = Date()
        let rollback = try t.rollbackctl("rollback", "--reason", "a reused pid")
        #expect(rollback.status == 0, "\(rollback)")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(rollback.stderr.contains("Note: The supervisor record names pid \(other.pid), which is not this install's supervisor (it started at "), "\(rollback)")
        #expect(try t.status().supervisor == nil)
    }

    /// The processes whose parent is `pid` and whose environment holds `variable`.
    static func children(of pid: Int32, with variable: String) -> [Int32] {
        SupervisorHardeningTests.children(of: pid).filter { child in
            let environment = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(child)/environ"))) ?? Data()
            return environment.split(separator: 0).contains { $0.starts(with: Array((variable + "=").utf8)) }
        }
    }

    /// The supervisor killed in the middle of the conversion its hand-off runs (the
    /// conversion's process stopped with SIGSTOP stands in for a long one): the conversion's
    /// process dies with it, the command takes the switch over and finishes it with exit 0,
    /// the history and `data-state` record the conversion, and nothing converts afterwards.
    @Test func aSupervisorKilledMidConversionLeavesNoOrphanAndTheCallerFinishesTheSwitch() throws {
        let (t, _, app) = try LiveSwitchDataTests.server(["supervise.drain_ms": "100", "supervise.grace_ms": "100"])
        defer { app.stop() }
        // The test holds the data lock, so the conversion waits for it where the test finds it.
        let lockPath = t.state + "/data.lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(lock >= 0)
        defer { close(lock) }
        try #require(waitUntil(seconds: 10) { flock(lock, LOCK_EX | LOCK_NB) == 0 }, "the serving child holds \(lockPath)")
        let rollback = HandOffFailureTests.Rollback(t)
        var found: [Int32] = []
        try #require(waitUntil(seconds: 30) { found = Self.children(of: app.pid, with: DataDowngrade.modeVariable); return !found.isEmpty },
                     "the supervisor never began the conversion: \(app.stderr)")
        let conversion = found[0]
        #expect(kill(conversion, SIGSTOP) == 0)
        let supervisor = app.pid
        app.stop()
        #expect(waitUntil(seconds: 5) { !isAlive(conversion) }, "the conversion of supervisor \(supervisor) outlived it: pid \(conversion)")
        flock(lock, LOCK_UN)

        let result = try rollback.result(within: 60)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Data: reverted migration step notes-v2 so that 1.1.9 can read it."), "\(result)")
        #expect(result.stdout.contains("Rolled back: the next start runs the previous slot (1.1.9)."), "\(result)")
        let history = try t.history()
        #expect(history.filter { $0.kind == "revert" }.count == 1, "\(history)")
        let dataState = try String(contentsOfFile: t.state + "/data-state", encoding: .utf8)
        #expect(!dataState.contains("reader_floor=1.2.0\n"), "data-state still names 1.2.0's floor: \(dataState)")
        #expect(try t.rollbackctl("status").stdout.contains("Rollback flag: set"))
        // Nothing converts afterwards: the data stays as the command left it.
        usleep(500_000)
        #expect(history.count == (try t.history()).count)
        let listed = try t.launcher("note", "list", environment: ["SWITCHBACK_SUPERVISE": "0"])
        #expect(listed.status == 0 && listed.stdout == "before one\nbefore two\n", "\(listed)")
    }
}
