import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Supervise mode with a real HTTP server child on loopback (the sample's `serve --http`,
/// which binds its address itself) on a socket the supervisor owns: live switches under
/// load, readiness, start deadlines, the watchdog and sd_notify, through the real binaries.
/// Release 1.3.0 of the release fixture is used: both its slots are built from these sources.
@Suite(.serialized) struct LiveSwitchTests {
    /// Release 1.3.0, supervised, listening on a free port, with `settings` in its manifest.
    static func server(_ settings: [String: String] = [:]) throws -> (TestBundle, Int) {
        let t = try TestBundle(release: "1.3.0")
        let port = try unusedLocalPort()
        try t.setManifestSetting("supervise", "true")
        try t.setManifestSetting("supervise.listen", "127.0.0.1:\(port)")
        for (key, value) in settings { try t.setManifestSetting(key, value) }
        return (t, port)
    }

    static func serve(_ t: TestBundle, _ port: Int, environment: [String: String] = [:]) throws -> SupervisedLauncher {
        try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: environment)
    }

    /// The version that answers GET / now, or nil.
    static func version(_ port: Int) -> String? {
        if case .ok(let body) = HTTPPoller.request(port: port, path: "/", timeout: .seconds(2)) { return HTTPPoller.versionKey(of: body) }
        return nil
    }

    static func kinds(_ t: TestBundle) throws -> [String] { try t.history().compactMap { $0.kind } }

    // MARK: - Zero downtime

    @Test func tenSwitchesUnderLoadRefuseNoConnectionAndFailNoRequest() throws {
        let (t, port) = try Self.server()
        let app = try Self.serve(t, port)
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { Self.version(port) == t.currentVersion })
        let poller = try HTTPPoller(port: port, interval: .milliseconds(3), maxRequests: 100_000, maxDuration: .seconds(240),
                                    slowRequests: .init(concurrency: 2, path: "/slow?ms=1000"))
        #expect(waitUntil(seconds: 10) { poller.summary().ok > 10 })
        var children: Set<Int32> = []
        for index in 0..<10 {
            let back = index % 2 == 0
            let result = try t.rollbackctl(back ? "rollback" : "rollforward")
            #expect(result.status == 0, "\(result)")
            let wanted = back ? t.previousVersion : t.currentVersion
            let switched = app.wait(upTo: 30) {
                app.record.map { $0.candidatePID == nil && $0.childReady == true && $0.childSlot == (back ? .previous : .current) } == true
            }
            #expect(switched, "switch \(index + 1): \(app.stderr)")
            #expect(waitUntil(seconds: 10) { Self.version(port) == wanted })
            if let child = app.record?.childPID { children.insert(child) }
        }
        // The old child drains after the new one is ready and may still answer a request or
        // two meanwhile; the last requests are the ones started after it is gone.
        let serving = try #require(app.record?.childPID)
        let gone = waitUntil(seconds: 30) {
            children.subtracting([serving]).allSatisfy { kill($0, 0) == -1 && errno == ESRCH }
        }
        #expect(gone, "every replaced child exits: \(app.stderr)")
        let countWhenGone = poller.summary().records.count
        #expect(waitUntil(seconds: 10) { poller.summary().records.count >= countWhenGone + 5 })
        let summary = poller.stop()
        print("ten live switches: \(summary)")
        #expect(summary.refused == 0, "\(summary)")
        #expect(summary.failed == 0, "\(summary)")
        #expect(summary.ok > 100, "\(summary)")
        #expect(summary.slowFailed == 0 && summary.slowOK > 0, "\(summary)")
        #expect(summary.versionsSeen.first == t.currentVersion && summary.versionsSeen.last == t.currentVersion, "\(summary)")
        #expect(Set(summary.versionsSeen) == [t.currentVersion, t.previousVersion], "\(summary)")
        #expect(children.count == 10, "every switch started a new child")
        #expect(app.stderr.contains("is ready (it said it was ready); stopping the current slot"))
    }

    /// Both builds bad (the current one rejected automatically, the previous one too, which
    /// started well more recently): no choice selects the previous slot, the planner does, and
    /// the supervisor switches to it live. Nobody else writes a line for that switch: the
    /// history records it as a fallback, with the planner's reason.
    @Test func aSwitchThePlannerMakesWhenBothBuildsAreBadIsInTheHistory() throws {
        let (t, port) = try Self.server()
        let app = try Self.serve(t, port)
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { Self.version(port) == t.currentVersion })
        let now = Int64(Date().timeIntervalSince1970)
        var record = HealthRecord()
        for (slot, lastGood) in [(BuildSlot.current, now - 3600), (.previous, now - 60)] {
            let build = try t.manifestValue("\(slot.rawValue).sha256")
            record.set(SlotHealth(build: build, verdict: .bad, failedStarts: 0, lastGoodAt: lastGood, changedAt: now,
                                  note: "crashed", version: slot == .current ? t.currentVersion : t.previousVersion, markedBy: .auto))
        }
        try Data(record.serialized()).write(to: URL(fileURLWithPath: t.state + "/health.new"))
        #expect(rename(t.state + "/health.new", t.state + "/health") == 0)
        #expect(waitUntil(seconds: 30) { Self.version(port) == t.previousVersion }, "\(app.stderr)")
        let fallback = try #require(try t.history().last { $0.kind == "fallback" }, "\(app.stderr)")
        #expect(fallback.from == "current" && fallback.to == "previous")
        #expect(fallback.reason == "the supervisor runs the previous slot (\(t.previousVersion)) because both builds are bad and this one started well most recently")
        #expect(try t.status().rollback == false, "no choice was written")
    }

    @Test func aHungPreviousBuildIsStoppedAtItsDeadlineWhileTheOldChildKeepsServing() throws {
        let (t, port) = try Self.server(["supervise.start_deadline_ms": "3000"])
        let app = try Self.serve(t, port, environment: ["SAMPLE_HANG_AT_START": t.previousVersion])
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { Self.version(port) == t.currentVersion })
        let serving = try #require(app.record?.childPID)
        let poller = try HTTPPoller(port: port, interval: .milliseconds(5), maxDuration: .seconds(60))
        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(app.wait(upTo: 30) { app.record?.switchFailure != nil }, "\(app.stderr)")
        usleep(500_000)
        let summary = poller.stop()
        #expect(summary.refused == 0 && summary.failed == 0, "\(summary)")
        #expect(summary.versionsSeen == [t.currentVersion], "\(summary)")
        #expect(app.record?.childPID == serving, "the old child still serves")

        #expect(app.stderr.contains("was not ready within 3 s (supervise.start_deadline_ms); stopped with SIGABRT for a backtrace, counted as a failed start."), "\(app.stderr)")
        #expect(app.stderr.contains("The switch to the previous slot (\(t.previousVersion)) did not happen: it was not ready within 3 s; the current slot (\(t.currentVersion)) keeps serving."), "\(app.stderr)")
        let kinds = try Self.kinds(t)
        #expect(kinds.contains("hung_start") && kinds.contains("switch_failed"), "\(kinds)")
        let failure = try #require((try t.status().supervisor)?.switchFailure)
        #expect(failure.slot == "previous")
        #expect(try t.rollbackctl("status").stdout.contains("Last switch: The switch to the previous slot (\(t.previousVersion)) did not happen"))
        #expect(try t.health("previous").failedStarts == 1, "the hung start used a try")
    }

    // MARK: - Settings that cannot work

    @Test(arguments: [
        ("supervise.listen", "example.com:80",
         "launcher: The manifest's supervise.listen 'example.com:80' is not a list of [NAME=]HOST:PORT addresses; rebuild the bundle with scripts/bundle --listen HOST:PORT.\n"),
        ("supervise.ready", "http://10.0.0.1:80/",
         "launcher: The manifest's supervise.ready 'http://10.0.0.1:80/' is not mark, tcp:HOST:PORT, http://LOOPBACK:PORT/PATH or command:COMMAND; rebuild the bundle with scripts/bundle --ready.\n"),
    ])
    func aSupervisorWithSettingsItCannotReadRefusesToStart(key: String, value: String, message: String) throws {
        let t = try TestBundle(release: "1.3.0")
        try t.setManifestSetting(key, value)
        let result = try t.launcher("serve", environment: ["SWITCHBACK_SUPERVISE": "1"])
        #expect(result.status == 70)
        #expect(result.stderr == message)
    }

    @Test func anAddressAlreadyInUseStopsTheSupervisorWithASentence() throws {
        let taken = try ListeningSocket()
        defer { close(taken.fd) }
        let t = try TestBundle(release: "1.3.0")
        try t.setManifestSetting("supervise.listen", "127.0.0.1:\(taken.port)")
        let result = try t.launcher("serve", environment: ["SWITCHBACK_SUPERVISE": "1"])
        #expect(result.status == 70)
        #expect(result.stderr == "launcher: The supervisor cannot listen on 127.0.0.1:\(taken.port) (supervise.listen): bind failed: Address already in use; stop what holds the address, or declare another with scripts/bundle --listen.\n")
    }

    // MARK: - Start deadline

    @Test func aFirstStartThatHangsIsStoppedAtItsDeadlineAndCounted() throws {
        // Longer than the 3 s AppVersions' first-install migration extends it by.
        let (t, port) = try Self.server(["supervise.start_deadline_ms": "4000", "supervise.backoff_initial_ms": "50"])
        let started = Date()
        let app = try Self.serve(t, port, environment: ["SAMPLE_HANG_AT_START": t.currentVersion])
        defer { app.stop() }
        #expect(app.wait(upTo: 15) { app.stderr.contains("was not ready within 4 s") })
        let seconds = Date().timeIntervalSince(started)
        #expect(seconds >= 3.9 && seconds <= 8, "stopped after \(seconds) s; the deadline is 4 s")
        // Three tries, each stopped at its deadline, then the previous slot serves.
        #expect(waitUntil(seconds: 90) { Self.version(port) == t.previousVersion }, "\(app.stderr)")
        let hung = try t.history().filter { $0.kind == "hung_start" }
        #expect(hung.count == 3 && hung.allSatisfy { $0.to == "current" }, "\(hung)")
        #expect(try t.health("current").verdict == "bad")
    }

    @Test func aMigrationLongerThanTheDeadlineExtendsItAndCompletes() throws {
        let (t, port) = try Self.server(["supervise.start_deadline_ms": "1500"])
        let app = try Self.serve(t, port, environment: ["SAMPLE_SLOW_MIGRATION_MS": "4000"])
        defer { app.stop() }
        #expect(waitUntil(seconds: 60) { Self.version(port) == t.currentVersion }, "\(app.stderr)")
        #expect(!app.stderr.contains("was not ready within"), "\(app.stderr)")
        #expect(try !Self.kinds(t).contains("hung_start"))
        // The good mark follows the app's readiness; the first answer can come a moment before it.
        #expect(waitUntil(seconds: 15) { (try? t.health("current").verdict) == "good" }, "\(app.stderr)")
    }

    // MARK: - Readiness probes

    enum Probe: String, CaseIterable {
        case tcp, http, command
    }

    /// An app that never marks itself good is made ready, and good, by the bundle's probe.
    @Test(arguments: Probe.allCases)
    func aProbeMakesAChildReadyWithoutAppCode(_ probe: Probe) throws {
        let port = try unusedLocalPort()
        let t = try TestBundle(release: "1.3.0")
        let flag = t.directory + "/ready-flag"
        let spec: String
        switch probe {
        case .tcp: spec = "tcp:127.0.0.1:\(port)"
        case .http: spec = "http://127.0.0.1:\(port)/"
        case .command: spec = "command:test -e \(flag)"
        }
        try t.setManifestSetting("supervise.ready", spec)
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: ["SAMPLE_NO_GOOD_MARK": "1"])
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { Self.version(port) == t.currentVersion })
        if probe == .command {
            usleep(500_000)
            #expect(app.record?.childReady == false, "not ready before the command passes")
            FileManager.default.createFile(atPath: flag, contents: Data())
        }
        #expect(app.wait(upTo: 10) { app.record?.childReady == true }, "\(app.stderr)")
        let health = try t.health("current")
        #expect(health.verdict == "good")
        #expect(health.note?.hasPrefix("ready: ") == true, "\(health)")
    }

    @Test func aChildMustStayUpForTheMinimumTimeToBeReady() throws {
        let port = try unusedLocalPort()
        let t = try TestBundle(release: "1.3.0")
        try t.setManifestSetting("supervise.ready", "tcp:127.0.0.1:\(port)")
        try t.setManifestSetting("supervise.min_ready_ms", "2000")
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: ["SAMPLE_NO_GOOD_MARK": "1"])
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { Self.version(port) == t.currentVersion })
        let answered = Date()
        #expect(app.wait(upTo: 10) { app.record?.childReady == true })
        #expect(Date().timeIntervalSince(answered) >= 1.5, "ready only after the minimum time")
    }

    /// During a switch the old child answers a probe of the shared address: only a probe the
    /// new child can have answered (it holds the socket) makes it ready.
    @Test func aProbeAnsweredByTheOldChildDoesNotMakeAHungOneReady() throws {
        let (t, port) = try Self.server(["supervise.start_deadline_ms": "3000"])
        try t.setManifestSetting("supervise.ready", "http://127.0.0.1:\(port)/")
        let app = try Self.serve(t, port, environment: ["SAMPLE_NO_GOOD_MARK": "1", "SAMPLE_HANG_AT_START": t.previousVersion])
        defer { app.stop() }
        #expect(app.wait(upTo: 30) { app.record?.childReady == true })
        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(app.wait(upTo: 30) { app.record?.switchFailure != nil }, "\(app.stderr)")
        #expect(Self.version(port) == t.currentVersion)
    }

    // MARK: - Watchdog

    @Test func aReadyChildThatStopsPingingItsWatchdogIsKilledAndRestarted() throws {
        let (t, port) = try Self.server(["supervise.watchdog_ms": "600", "supervise.backoff_initial_ms": "50"])
        let app = try Self.serve(t, port, environment: ["SAMPLE_STOP_WATCHDOG_AFTER_S": "1.5"])
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { Self.version(port) == t.currentVersion })
        let first = try #require(app.record?.childPID)
        #expect(app.wait(upTo: 15) { app.stderr.contains("sent no WATCHDOG=1 within 600 ms (supervise.watchdog_ms); stopped with SIGABRT for a backtrace, counted as a crash.") }, "\(app.stderr)")
        #expect(app.wait(upTo: 15) { (app.record?.restarts ?? 0) >= 1 && app.record?.childPID != first })
        #expect(app.stderr.contains("(pid \(first)) was killed by signal"), "\(app.stderr)")
    }

    // MARK: - systemd

    @Test func theSupervisorSpeaksSdNotifyInOrder() throws {
        let (t, port) = try Self.server()
        let listener = try NotifyListener(directory: t.directory)
        let app = try Self.serve(t, port, environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "400000"])
        defer { app.stop() }
        #expect(listener.wait(upTo: 30) { $0.contains { $0.hasPrefix("READY=1") } })
        let ready = try #require(listener.messages.first { $0.hasPrefix("READY=1") })
        let child = try #require(app.record?.childPID)
        #expect(ready == "READY=1\nSTATUS=Running the current slot (\(t.currentVersion)), pid \(child)\nMAINPID=\(app.pid)")
        #expect(listener.wait(upTo: 5) { $0.filter { $0 == "WATCHDOG=1" }.count >= 3 }, "pings at half of WATCHDOG_USEC")

        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(listener.wait(upTo: 30) { $0.filter { $0.hasPrefix("READY=1") }.count == 2 }, "\(listener.messages)")
        kill(app.pid, SIGTERM)
        app.waitForExit()
        #expect(listener.wait(upTo: 5) { $0.contains("STOPPING=1") })
        let significant = listener.messages.filter { $0 != "WATCHDOG=1" }
        #expect(significant.map { $0.split(separator: "\n").first.map(String.init) ?? "" } == ["READY=1", "RELOADING=1", "READY=1", "STOPPING=1"],
                "\(significant)")
        #expect(significant[1].hasPrefix("RELOADING=1\nSTATUS=Switching to the previous slot (\(t.previousVersion))\nMONOTONIC_USEC="))
        #expect(significant[2].hasPrefix("READY=1\nSTATUS=Running the previous slot (\(t.previousVersion))"))
    }

    @Test func unsupervisedTheLauncherSaysReadyWhenTheAppMarksItselfGood() throws {
        let t = try TestBundle()
        let listener = try NotifyListener(directory: t.directory)
        #expect(try t.launcher("version", environment: ["NOTIFY_SOCKET": listener.path]).status == 0)
        #expect(listener.wait(upTo: 5) { $0.contains("READY=1") }, "\(listener.messages)")
        listener.wait(upTo: 0.3) { _ in false }
        // Once (the launcher says it, the SDK does not repeat it), after the first install's
        // migration extended the start deadline.
        #expect(listener.messages.filter { !$0.hasPrefix("EXTEND_TIMEOUT_USEC=") } == ["READY=1"], "\(listener.messages)")
        // Not before: a start that never marks itself good says nothing.
        let quiet = try NotifyListener(directory: t.directory)
        _ = try t.launcher("exit", "3", environment: ["NOTIFY_SOCKET": quiet.path])
        #expect(!quiet.wait(upTo: 0.5) { !$0.isEmpty }, "\(quiet.messages)")
    }

    /// systemd socket activation: the supervisor takes the sockets systemd passed (LISTEN_FDS,
    /// LISTEN_PID its own) instead of opening any, and hands them on.
    @Test func socketActivationHandsSystemdsSocketToTheChild() throws {
        let t = try TestBundle(release: "1.3.0")
        let listening = try ListeningSocket()
        defer { close(listening.fd) }
        let stderr = t.directory + "/activated.err"
        let script = "LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=web exec \"$0\" serve --http 127.0.0.1:\(listening.port)"
        let pid = try spawn("/bin/sh", ["-c", script, t.bundle + "/bin/launcher"],
                            environment: ["SWITCHBACK_STATE_DIR": t.state, "SWITCHBACK_SUPERVISE": "1", "PATH": "/usr/bin:/bin"],
                            keepingDescriptorsBelow: 4) { actions in
            posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_adddup2(&actions, listening.fd, 3)
        }.get()
        defer {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        // The test still holds the socket: the app could not have bound the port itself.
        #expect(waitUntil(seconds: 30) { Self.version(listening.port) == t.currentVersion },
                "\((try? String(contentsOfFile: stderr, encoding: .utf8)) ?? "")")
    }
}

/// A listening TCP socket on a free loopback port, not close-on-exec.
struct ListeningSocket {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 128) == 0 else { throw TestFailure("bind/listen failed") }
        port = Int(UInt16(bigEndian: address.sin_port))
    }
}
