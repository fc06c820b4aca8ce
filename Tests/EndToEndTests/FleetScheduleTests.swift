import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The remote check's schedule through the real binaries (docs/remote.md, "Scheduling"):
/// many installs started together spread their requests; a failed check is retried after
/// the floor, not after the interval; `check_before_start` honours the interval. The servers
/// are a real nginx on 127.0.0.1 logging when each request arrives, and a small logging
/// server for the status codes nginx does not answer a plain file with (503).
@Suite(.serialized) struct FleetScheduleTests {
    @Test func aHundredInstallsStartedTogetherSpreadTheirFirstChecks() throws {
        let fleet = try RemoteDirectiveTests.Fleet()
        let t = fleet.t
        // nginx over an empty directory: every check is a 404, a failed check.
        let root = t.directory + "/www"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let server = try NginxServer(root: root, logRequests: true)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        try t.setManifestSetting("remote.interval_s", "3600")
        try t.setManifestSetting("remote.splay_s", "8")
        // The server answers 404, a failed check: a floor of an hour keeps the retries out of
        // the count however slowly a loaded machine starts the 100 installs.
        try t.setManifestSetting("remote.retry_floor_s", "3600")

        // 100 installs, each with its own state directory, started by one shell in one go.
        let count = 100
        let script = """
        for i in $(seq 1 \(count)); do
          SWITCHBACK_STATE_DIR="\(t.directory)/installs/$i" "\(t.bundle)/bin/launcher" version >/dev/null 2>&1 &
        done
        wait
        """
        let started = Date()
        let run = try runProcess("/bin/bash", ["-c", script])
        #expect(run.status == 0, "\(run)")
        // The starts themselves never wait for the network.
        #expect(Date().timeIntervalSince(started) < 60)
        #expect(waitUntil(seconds: 90) { server.requestTimes().count >= count })
        usleep(1_000_000)
        let times = server.requestTimes()
        #expect(times.count == count, "one first check per install")
        let busiest = busiestWindow(times, width: 1)
        let spread = (times.last ?? 0) - (times.first ?? 0)
        print("FleetScheduleTests: \(times.count) requests over \(String(format: "%.2f", spread)) s, at most \(busiest) in one second")
        #expect(busiest <= count / 2, "at most half of the requests in any 1-second window, not \(busiest)")
        #expect(spread > 4, "spread over the 8-second splay, not \(spread) s")
        // Each install then holds its next due time, in the future: no start checks again now.
        for i in 1...count {
            let marker = "\(t.directory)/installs/\(i)/remote.attempt"
            let due = try FileManager.default.attributesOfItem(atPath: marker)[.modificationDate] as? Date
            #expect((due ?? .distantPast) > Date(), "install \(i)'s next check is in the future")
        }
    }

    /// Issue 28.2: a new install does not wait out the hour's splay. Ten installs, each with
    /// its own state directory and the default schedule (interval and splay an hour, first
    /// check within 30 s), started after the rollback was published: each fetches within its
    /// 30-second window (plus the sync's own start on a loaded machine) and applies it; the
    /// next start runs the previous slot. The check after the first is drawn from the
    /// window's end over the interval: due between the window's end and an interval after it.
    @Test func anInstallStartedAfterAPublishAppliesItWithinThirtySeconds() throws {
        let fleet = try RemoteDirectiveTests.Fleet()
        let t = fleet.t
        try Self.removeManifestSetting(t, "remote.splay_s")  // Fleet turns it off; the defaults here
        let server = try NginxServer(root: fleet.www, logRequests: true)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        try fleet.publish("previous", serial: 1)
        let manifest = try String(contentsOfFile: t.bundle + "/manifest", encoding: .utf8)
        #expect(!manifest.contains("remote.splay_s=") && !manifest.contains("remote.first_check_s=")
                && !manifest.contains("remote.interval_s="), "default settings")

        let count = 10
        let script = """
        for i in $(seq 1 \(count)); do
          SWITCHBACK_STATE_DIR="\(t.directory)/installs/$i" "\(t.bundle)/bin/launcher" version >/dev/null 2>&1 &
        done
        wait
        """
        let started = Date()
        let run = try runProcess("/bin/bash", ["-c", script])
        #expect(run.status == 0, "\(run)")
        var applied: [Int: Double] = [:]
        func isApplied(_ i: Int) -> Bool {
            let state = (try? String(contentsOfFile: "\(t.directory)/installs/\(i)/state", encoding: .utf8)) ?? ""
            return state.split(separator: "\n").contains("rollback=true")
        }
        // 30 s of window, and as much again for the syncs' own start on two shared cores.
        _ = waitUntil(seconds: 60) {
            for i in 1...count where applied[i] == nil && isApplied(i) { applied[i] = Date().timeIntervalSince(started) }
            return applied.count == count
        }
        let requests = server.requestTimes().map { $0 - started.timeIntervalSince1970 }
        print("FleetScheduleTests: \(applied.count) of \(count) installs applied the rollback after "
              + applied.values.sorted().map { String(format: "%.1f", $0) }.joined(separator: ", ") + " s; requests at "
              + requests.map { String(format: "%.1f", $0) }.joined(separator: ", ") + " s")
        #expect(applied.count == count, "installs that applied it: \(applied.keys.sorted())")
        #expect(requests.count == count, "one check per install")
        // The wait itself is at most 30 s; the rest is the sync starting on a loaded machine.
        #expect(requests.allSatisfy { $0 <= 45 }, "every first check within its window: \(requests)")
        for i in 1...count {
            // The sync records the serial it accepted just after the state it applied: looked
            // for until it is there (one run read install 5's record in between).
            var remote = ""
            _ = waitUntil(seconds: 10) {
                remote = (try? String(contentsOfFile: "\(t.directory)/installs/\(i)/remote", encoding: .utf8)) ?? ""
                return remote.contains("accepted_serial=1\n")
            }
            #expect(remote.contains("accepted_serial=1\n"), "install \(i): \(remote)")
            // The next check: after the window's end, at most an interval after it.
            let marker = "\(t.directory)/installs/\(i)/remote.attempt"
            let due = try FileManager.default.attributesOfItem(atPath: marker)[.modificationDate] as? Date ?? .distantPast
            let after = due.timeIntervalSince(started)
            #expect(after >= 29 && after <= 3600 + 60, "install \(i)'s next check is due \(after) s after the start")
        }
        // The next start runs the previous slot.
        let next = try t.run(t.bundle + "/bin/launcher", [], environment: ["SWITCHBACK_STATE_DIR": t.directory + "/installs/1"])
        #expect(next.stdout.hasPrefix(t.greeting(.previous)), "\(next)")
    }

    /// Removes `key` from the test bundle's manifest, so that its default applies.
    static func removeManifestSetting(_ t: TestBundle, _ key: String) throws {
        let path = t.bundle + "/manifest"
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix(key + "=") }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test func aFailedCheckIsRetriedAfterTheFloorNotAfterTheInterval() throws {
        let fleet = try RemoteDirectiveTests.Fleet()
        let t = fleet.t
        let server = try RequestLogServer(status: 503, directory: t.directory)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        try t.setManifestSetting("remote.interval_s", "3600")
        try t.setManifestSetting("remote.retry_floor_s", "2")
        try t.setManifestSetting("remote.splay_s", "0")

        #expect(try t.launcher("version").status == 0)
        #expect(waitUntil(seconds: 30) { server.requestTimes().count == 1 })
        #expect(waitUntil(seconds: 30) { (try? fleet.remote().outcome) == "unreachable" })
        // Starts keep coming; the retry comes between the floor and twice the floor, never
        // after the hour the interval would have waited.
        var starts = 0
        let gaveUpAt = Date().addingTimeInterval(40)
        while server.requestTimes().count < 2, Date() < gaveUpAt {
            #expect(try t.launcher("version").status == 0)
            starts += 1
            usleep(200_000)
        }
        let times = server.requestTimes()
        try #require(times.count >= 2, "no retry within 40 s")
        let gap = times[1] - times[0]
        print("FleetScheduleTests: retry after \(String(format: "%.2f", gap)) s (\(starts) starts)")
        #expect(gap >= 1.9, "not before the 2-second floor: \(gap) s")
        #expect(gap < 30, "long before the interval: \(gap) s")
        #expect(starts > 3, "starts in between did not check")
    }

    @Test func checkBeforeStartFetchesOnlyWhenDue() throws {
        let fleet = try RemoteDirectiveTests.Fleet()
        let t = fleet.t
        let server = try LocalHTTPServer.staticFiles(root: fleet.www)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        try t.setManifestSetting("remote.check_before_start", "true")
        try t.setManifestSetting("remote.interval_s", "3600")
        try fleet.publish("previous", serial: 1)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        // Published after the check: the next starts are within the interval and do not fetch.
        try fleet.publish("current", serial: 2)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        #expect(try fleet.remote().acceptedSerial == 1)
        // Due again (the marker dated past): the start fetches and applies it before running.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-1)], ofItemAtPath: t.state + "/remote.attempt")
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
        #expect(try fleet.remote().acceptedSerial == 2)
    }

    @Test func theWaitingSyncHoldsNothingTheStartLeftOpen() throws {
        let fleet = try RemoteDirectiveTests.Fleet()
        let t = fleet.t
        let server = try RequestLogServer(status: 404, directory: t.directory)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        // A first check's window of about three years: the first check surely waits (Fleet
        // turns the splay off, and the window is capped by it).
        try t.setManifestSetting("remote.splay_s", "100000000")
        try t.setManifestSetting("remote.first_check_s", "100000000")
        // The start's descriptor 3 is a pipe to `cat`, which ends only when every writer has
        // closed it: a sync waiting its splay must not be one of them.
        let started = Date()
        let run = try runProcess("/bin/bash", ["-c", "'\(t.bundle)/bin/launcher' version 3>&1 >/dev/null | cat; echo done"],
                                 environment: ProcessInfo.processInfo.environment.merging(["SWITCHBACK_STATE_DIR": t.state]) { $1 })
        #expect(run.status == 0 && run.stdout == "done\n", "\(run)")
        #expect(Date().timeIntervalSince(started) < 30, "the pipe was held open")
        // The waiting process says what it is, and holds no descriptor above 2 but the checked
        // program it will run (read-only, close-on-exec: ProgramCheckTests).
        let waiting = try FileManager.default.contentsOfDirectory(atPath: "/proc").compactMap(Int32.init).filter { pid in
            let comm = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
            let environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
            return comm == "switchback-wait\n" && String(decoding: environ, as: UTF8.self).contains("SWITCHBACK_STATE_DIR=\(t.state)\0")
        }
        #expect(waiting.count == 1, "one waiting sync: \(waiting)")
        for pid in waiting {
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            let program = URL(fileURLWithPath: t.bundle + "/bin/rollbackctl-remote").resolvingSymlinksInPath().path
            let above = descriptors.compactMap(Int.init).filter { $0 > 2 }
            let targets = above.map { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
            #expect(above.count <= 1 && targets.allSatisfy { $0 != nil && $0 == program }, "descriptors \(descriptors): \(targets)")
            kill(pid, SIGKILL)  // started by this test; its wait would outlive it
        }
        #expect(server.requestTimes().isEmpty, "still waiting, nothing fetched yet")
    }

    /// The window's end the launcher passes to a first check's sync is checked like any other
    /// option: a bad one is a usage error (64), and the sync fetches nothing.
    @Test func aBadFirstCheckWindowEndIsAUsageError() throws {
        let t = try TestBundle()
        let usage = try t.rollbackctl("sync", "--window-end", "soon")
        #expect(usage.status == 64)
        #expect(usage.stderr.hasPrefix("Error: '--window-end' must be a time in milliseconds since the epoch, not 'soon'.\n"), "\(usage)")
        #expect(usage.stderr.hasSuffix("See 'rollbackctl sync --help' for help.\n"), "\(usage)")
        let negative = try t.rollbackctl("sync", "--window-end", "-5")
        #expect(negative.status == 64, "\(negative)")
        let help = try t.rollbackctl("sync", "--help")
        #expect(help.status == 0 && help.stdout.contains("--window-end MS"), "\(help)")
    }

    @Test(arguments: [
        (["--check-splay", "soon"], "Error: --check-splay needs a whole number, not 'soon'."),
        (["--first-check", "-1"], "Error: --first-check needs a whole number, not '-1'."),
        (["--retry-floor", "-3"], "Error: --retry-floor needs a whole number, not '-3'."),
        (["--metrics-dir", "textfile"], "Error: --metrics-dir needs an absolute directory, such as /var/lib/prometheus/node-exporter."),
        (["--metrics-dir"], "Error: --metrics-dir needs a value (DIR)."),
    ])
    func bundleFlagsOfTheScheduleAndTheMetricsAreChecked(arguments: [String], error: String) throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let result = try runProcess(repository + "/scripts/bundle", arguments, deadline: buildDeadline)
        #expect(result.status == 64)
        #expect(result.stderr == error + "\nSee 'switchback-bundle --help'.\n", "\(result)")
    }
}
