import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A supervised launcher running as a real process, its output in files.
final class SupervisedLauncher {
    let t: TestBundle
    let process: SpawnedProcess
    let stderrPath: String

    init(_ t: TestBundle, _ arguments: [String], environment: [String: String] = [:]) throws {
        self.t = t
        stderrPath = t.directory + "/supervisor-\(UUID().uuidString).err"
        process = try SpawnedProcess(t.bundle + "/bin/launcher", arguments,
                                     environment: ["SWITCHBACK_STATE_DIR": t.state, "SWITCHBACK_SUPERVISE": "1", "PATH": "/usr/bin:/bin"]
                                        .merging(environment) { $1 },
                                     stderr: stderrPath)
    }

    var pid: Int32 { process.pid }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The heartbeat the sample server writes: version, slot, pid, state.
    var heartbeat: [String: String] {
        guard let text = try? String(contentsOfFile: t.state + "/data/heartbeat", encoding: .utf8) else { return [:] }
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    /// What the supervisor publishes for `rollbackctl status`.
    var record: SupervisorRecord? {
        if case .live(let live) = SupervisorIdentity.check(in: StateDirectory(path: t.state)) { return live.record }
        return nil
    }

    /// Polls `condition` until it holds or `seconds` pass; returns whether it held.
    @discardableResult
    func wait(upTo seconds: Double, for condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    /// Waits for the supervisor to exit.
    func waitForExit() { process.wait() }

    func stop() {
        if !process.hasExited { kill(pid, SIGKILL) }
        process.wait()
    }

    deinit { stop() }
}

func isAlive(_ pid: Int32) -> Bool {
    guard kill(pid, 0) == 0 else { return false }
    // A zombie still answers kill(0); it is not running.
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    return !status.contains("State:\tZ")
}

/// Supervise mode through the real binaries.
@Suite(.serialized) struct SupervisorTests {
    func fastRestarts(_ t: TestBundle) throws {
        try t.setManifestSetting("supervise.backoff_initial_ms", "20")
        try t.setManifestSetting("supervise.backoff_max_ms", "80")
    }

    @Test func rollbackWhileServingSwitchesTheChildWithinTwoSeconds() throws {
        let t = try TestBundle()
        let app = try SupervisedLauncher(t, ["serve"])
        #expect(app.wait(upTo: 30) { app.heartbeat["slot"] == "current" && app.record?.childSlot == .current })
        let firstChild = try #require(app.record?.childPID)
        let status = try t.rollbackctl("status")
        #expect(status.stdout.contains("Supervisor: pid \(app.pid), child pid \(firstChild) running the current slot"))

        let switched = Date()
        #expect(try t.rollbackctl("rollback", "--reason", "live switch").status == 0)
        #expect(app.wait(upTo: 2) { app.heartbeat["slot"] == "previous" && app.heartbeat["state"] == "running" })
        #expect(Date().timeIntervalSince(switched) <= 2.0)
        #expect(app.heartbeat["version"] == t.previousVersion)
        #expect(!isAlive(firstChild), "the replaced child is gone")
        // The current build's data must be converted back for the previous one: the rollback is
        // handed to the supervisor, which stops its child before it converts (stop-first).
        #expect(app.stderr.contains("launcher: supervisor: the persisted choice now selects the previous slot; stop-first: the data (reader floor \(t.currentVersion)) must be converted back for \(t.previousVersion); stopping the current slot (pid \(firstChild)) first, new connections wait in the queue."), "\(app.stderr)")

        kill(app.pid, SIGTERM)
        app.waitForExit()
        #expect(app.process.exitCode == 0)
    }

    @Test func sigtermEndsBothWithTheChildsStatus() throws {
        let t = try TestBundle()
        let app = try SupervisedLauncher(t, ["serve"])
        #expect(app.wait(upTo: 30) { app.record?.childSlot != nil && app.heartbeat["state"] == "running" })
        let child = try #require(app.record?.childPID)
        kill(app.pid, SIGTERM)
        app.waitForExit()
        #expect(app.process.exitCode == 0, "serve exits 0 on SIGTERM, and so does the supervisor")
        #expect(app.heartbeat["state"] == "stopped")
        #expect(!isAlive(child))
        #expect(!FileManager.default.fileExists(atPath: t.state + "/supervisor"))
    }

    @Test func sigtermToAChildThatIgnoresItEscalatesToSIGKILLAfterTheGracePeriod() throws {
        let t = try TestBundle()
        try t.setManifestSetting("supervise.grace_ms", "300")
        let app = try SupervisedLauncher(t, ["hang", "--ignore-sigterm"])
        #expect(app.wait(upTo: 30) { app.record?.childSlot != nil })
        let child = try #require(app.record?.childPID)
        usleep(100_000)  // let the child install its SIG_IGN
        let stopped = Date()
        kill(app.pid, SIGTERM)
        app.waitForExit()
        #expect(Date().timeIntervalSince(stopped) >= 0.3, "the child got its grace period")
        #expect(app.process.exitCode == 128 + SIGKILL, "the supervisor exits with the child's status: killed by SIGKILL")
        #expect(!isAlive(child))
    }

    @Test func forwardedSignalsReachTheChildAndAChildKilledByOneIsRestarted() throws {
        let t = try TestBundle()
        try t.setManifestSetting("trial.tries", "100")
        let app = try SupervisedLauncher(t, ["hang"])  // never marks itself good
        #expect(app.wait(upTo: 30) { app.record?.childSlot != nil })
        let child = try #require(app.record?.childPID)
        kill(app.pid, SIGUSR1)  // forwarded: the default action of SIGUSR1 kills the child
        #expect(app.wait(upTo: 10) { !isAlive(child) })
        #expect(app.wait(upTo: 10) { (app.record?.restarts ?? 0) >= 1 }, "a child killed by a forwarded signal is restarted")
        kill(app.pid, SIGTERM)
        app.waitForExit()
        #expect(app.process.exitCode == 128 + SIGTERM)
    }

    @Test func killingTheSupervisorWithSIGKILLTakesTheChildWithIt() throws {
        let t = try TestBundle()
        let app = try SupervisedLauncher(t, ["serve"])
        #expect(app.wait(upTo: 30) { app.record?.childSlot != nil && app.heartbeat["state"] == "running" })
        let child = try #require(app.record?.childPID)
        kill(app.pid, SIGKILL)
        app.waitForExit()
        #expect(app.wait(upTo: 5) { !isAlive(child) }, "PR_SET_PDEATHSIG ends the orphan")
    }

    @Test func aChildCrashingBeforeItsGoodMarkLeadsToTheOtherSlotAfterItsTries() throws {
        let t = try TestBundle()
        try fastRestarts(t)
        let app = try SupervisedLauncher(t, ["crash"])
        #expect(app.wait(upTo: 30) { app.stderr.contains("failed 3 starts without being marked good; running the previous slot") })
        app.stop()
        #expect(app.stderr.components(separatedBy: "restarting in").count - 1 >= 3)
        #expect(try t.status().source == "auto")
    }

    @Test func aGoodBuildThatKeepsCrashingIsMarkedBadAndTheOtherSlotStarts() throws {
        let t = try TestBundle()
        try fastRestarts(t)
        let app = try SupervisedLauncher(t, ["serve", "--crash-after", "0.3"])
        #expect(app.wait(upTo: 30) { app.heartbeat["slot"] == "previous" })
        #expect(app.stderr.contains("launcher: supervisor: the current build (\(t.currentVersion)) crashed 3 times within 60 s after it was marked good; starting the previous slot (\(t.previousVersion)) instead."))
        app.stop()
        let health = try t.health("current")
        #expect(health.verdict == "bad")
        #expect(try t.status().source == "auto")
        #expect(try t.history().last?.reason?.contains("crashed 3 times within 60 s") == true)
    }

    @Test func fiveHundredRestartsLeaveMemoryAndDescriptorsFlat() throws {
        let t = try TestBundle()
        try t.setManifestSetting("supervise.backoff_initial_ms", "1")
        try t.setManifestSetting("supervise.backoff_max_ms", "1")
        try t.setManifestSetting("trial.tries", "100000")
        let app = try SupervisedLauncher(t, ["exit", "3"])
        // The fewest over a few samples: the report pipe of a child being started comes and goes.
        func measure() -> (rss: Int, fds: Int) {
            var best = (rss: Int.max, fds: Int.max)
            for _ in 0..<20 {
                let sample = sampleOnce()
                best = (min(best.rss, sample.rss), min(best.fds, sample.fds))
                usleep(2_000)
            }
            return best
        }
        func sampleOnce() -> (rss: Int, fds: Int) {
            let status = (try? String(contentsOfFile: "/proc/\(app.pid)/status", encoding: .utf8)) ?? ""
            let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
                .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true)[1]) } ?? -1
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(app.pid)/fd").count) ?? -1
            return (rss, fds)
        }
        #expect(app.wait(upTo: 120) { (app.record?.restarts ?? 0) >= 50 })
        let early = measure()
        #expect(app.wait(upTo: 300) { (app.record?.restarts ?? 0) >= 550 })
        let late = measure()
        app.stop()
        #expect(early.rss > 0 && late.rss > 0)
        #expect(late.rss - early.rss < 1024, "RSS grew from \(early.rss) kB to \(late.rss) kB over 500 restarts")
        // A descriptor leaked per restart (or per ten) would add 50 or more; one more or fewer is
        // a child's report pipe caught in every sample on a loaded machine.
        #expect(abs(late.fds - early.fds) <= 1, "descriptors: \(early.fds) then \(late.fds) over 500 restarts")
        let zombies = (try? runProcess("/bin/sh", ["-c", "ps --ppid \(app.pid) -o stat= | grep -c Z || true"]))?.stdout ?? ""
        #expect(zombies.trimmingCharacters(in: .whitespacesAndNewlines) == "0" || zombies.isEmpty)
    }
}
