import Foundation
import RollbackCtlKit
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The bake window on one host through the real binaries: a supervised release 1.3.0 of the
/// release fixture serving HTTP on a socket the supervisor owns, the analyzer
/// (`rollbackctl-remote analyze`) it spawns, and `rollbackctl promote` / `abort` /
/// `bake-window` / `status`, with the probation record, the history and the metrics file.
@Suite(.serialized) struct SupervisorProbationTests {
    /// Release 1.3.0, supervised on a free port, a bake window of `window` seconds with the
    /// app's own check, the metrics written to `metrics/`, and `settings` on top.
    static let appCheck = ["analysis.checks": "app", "analysis.check.app.kind": "app", "analysis.check.app.max_failures": "10"]

    static func server(window: Int = 30, _ settings: [String: String] = appCheck) throws -> (TestBundle, Int) {
        let (t, port) = try LiveSwitchTests.server(["analysis.window_s": String(window), "analysis.interval_s": "1"])
        try FileManager.default.createDirectory(atPath: t.directory + "/metrics", withIntermediateDirectories: true)
        try t.setManifestSetting("metrics.textfile_dir", t.directory + "/metrics")
        for (key, value) in settings { try t.setManifestSetting(key, value) }
        return (t, port)
    }

    static func probation(_ t: TestBundle) -> ProbationRecord? {
        (try? ProbationRecord.load(in: StateDirectory(path: t.state))) ?? nil
    }

    static func metrics(_ t: TestBundle) throws -> String {
        let files = try FileManager.default.contentsOfDirectory(atPath: t.directory + "/metrics").filter { $0.hasSuffix(".prom") }
        try #require(files.count == 1, "one metrics file: \(files)")
        let path = t.directory + "/metrics/" + files[0]
        let checked = try runProcess("/bin/bash", ["-c", "\(MonitoringTests.promtool) check metrics < '\(path)'"])
        #expect(checked.status == 0 && checked.stdout.isEmpty && checked.stderr.isEmpty, "promtool: \(checked)")
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    // MARK: - promote and abort

    @Test func abortRollsTheBuildBackLiveWithTheReasonInTheHistory() throws {
        let (t, port) = try Self.server()
        let app = try LiveSwitchTests.serve(t, port)
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { LiveSwitchTests.version(port) == t.currentVersion })
        #expect(app.wait(upTo: 30) { Self.probation(t)?.state.isOpen == true }, "\(app.stderr)")
        let record = try #require(Self.probation(t))
        #expect(record.slot == .current && record.version == t.currentVersion && record.windowSeconds == 30)
        #expect(try t.rollbackctl("status").stdout.contains("Probation: the current build (\(t.currentVersion))"))

        let poller = try HTTPPoller(port: port, interval: .milliseconds(5), maxDuration: .seconds(120))
        #expect(waitUntil(seconds: 10) { poller.summary().ok > 10 })
        let result = try t.rollbackctl("abort")
        #expect(result.status == 0, "\(result) \(app.stderr)")
        #expect(result.stdout == "Aborted the current build (\(t.currentVersion)): it is marked bad and the previous slot (\(t.previousVersion)) takes over.\n")
        #expect(waitUntil(seconds: 30) { LiveSwitchTests.version(port) == t.previousVersion }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { poller.summary().versionsSeen.last == t.previousVersion })
        let summary = poller.stop()
        #expect(summary.refused == 0 && summary.failed == 0, "\(summary)")

        let history = try t.history()
        let aborted = try #require(history.first { $0.kind == "probation_aborted" })
        #expect(aborted.reason == "the current build (\(t.currentVersion)) was aborted by the operator (rollbackctl abort)")
        #expect(aborted.source == "cli", "an operator's abort is recorded as the operator's")
        let rollback = try #require(history.last { $0.kind == "switch" })
        // An operator's abort is an explicit rejection, as `rollbackctl mark-bad` is: automatic
        // rollback never returns to the build.
        #expect(rollback.to == "previous" && rollback.source == "cli")
        #expect(rollback.reason == "the current build (\(t.currentVersion)) was aborted by the operator during its bake window (rollbackctl abort)")
        let health = try t.health("current")
        #expect(health.verdict == "bad" && health.note == "was aborted by the operator during its bake window (rollbackctl abort)" && health.markedBy == "cli")
        // The previous build, now serving, is a changed build: on probation in its turn.
        #expect(app.wait(upTo: 30) { Self.probation(t)?.slot == .previous }, "\(app.stderr)")
    }

    @Test func promoteEndsTheWindowWithTheBuildGoodAndTheNote() throws {
        let (t, port) = try Self.server()
        let app = try LiveSwitchTests.serve(t, port)
        defer { app.stop() }
        #expect(app.wait(upTo: 30) { Self.probation(t)?.state.isOpen == true }, "\(app.stderr)")
        let result = try t.rollbackctl("promote")
        #expect(result.status == 0, "\(result) \(app.stderr)")
        #expect(result.stdout == "Promoted the current build (\(t.currentVersion)): its bake window ended early and it stays, marked good.\n")
        #expect(Self.probation(t)?.state == .promoted)
        let health = try t.health("current")
        #expect(health.verdict == "good" && health.note == "promoted by the operator during its bake window")
        #expect(try t.history().contains { $0.kind == "probation_promoted" && $0.source == "cli" }, "an operator's promote is recorded as the operator's")
        #expect(LiveSwitchTests.version(port) == t.currentVersion, "it keeps serving")

        let status = try #require(try t.status().probation)
        #expect(status.state == "promoted" && status.slot == "current" && status.windowSeconds == 30 && status.secondsLeft == 0)
        #expect(status.result == "promoted by the operator (rollbackctl promote)" && status.supervised)
        let metrics = try Self.metrics(t)
        #expect(metrics.contains("slot=\"current\",state=\"promoted\",version=\"\(t.currentVersion)\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("switchback_probation_ends_timestamp_seconds{"))

        // Ended: a second request says so.
        let again = try t.rollbackctl("abort")
        #expect(again.status == 1)
        #expect(again.stderr == "Error: Nothing is on probation in \(t.state); the last probation, of the current build (\(t.currentVersion)), ended promoted.\n")
    }

    // MARK: - The window ends

    @Test func aHealthyReleasePassesItsWindowJudgedByAnHTTPCheck() throws {
        let (t, port) = try Self.server(window: 5, [
            "analysis.checks": "http", "analysis.check.http.kind": "http",
            "analysis.check.http.url": "", "analysis.check.http.probe_interval_ms": "200",
            "analysis.check.http.max_failure_percent": "5", "analysis.check.http.min_probes": "3",
        ])
        try t.setManifestSetting("analysis.check.http.url", "http://127.0.0.1:\(port)/")
        let app = try LiveSwitchTests.serve(t, port)
        defer { app.stop() }
        #expect(app.wait(upTo: 60) { Self.probation(t).map { $0.state != .baking } == true }, "\(app.stderr)")
        let record = try #require(Self.probation(t))
        #expect(record.state == .passed, "\(record) \(app.stderr)")
        #expect(record.checks.first?.name == "http" && record.checks.first?.phase == "successful", "\(record)")
        let health = try t.health("current")
        #expect(health.verdict == "good" && health.note == "passed its 5 s bake window")
        let passed = try #require(try t.history().first { $0.kind == "probation_passed" })
        #expect(passed.reason?.hasPrefix("the current build (\(t.currentVersion)) passed its 5 s bake window: ") == true, "\(passed)")
        let metrics = try Self.metrics(t)
        #expect(metrics.contains("result=\"passed\"} 1\n"), "\(metrics)")
        let text = try t.rollbackctl("status").stdout
        #expect(text.contains("Probation: the current build (\(t.currentVersion)) passed (5 s window"), "\(text)")
        #expect(text.contains("  http: successful: "), "\(text)")
    }

    // MARK: - Failure paths of the commands

    @Test func promoteAndAbortWithoutASupervisorSaySo() throws {
        let (t, _) = try Self.server()
        for command in ["promote", "abort"] {
            let result = try t.rollbackctl(command)
            #expect(result.status == 1)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr == "Error: No supervisor runs for the state directory \(t.state), so nothing is on probation; a bake window runs only under the supervisor (supervise mode).\n")
        }
    }

    @Test func promoteWithoutAProbationSaysSo() throws {
        // Probation off with the override: the supervisor runs, nothing is on probation.
        let (t, port) = try Self.server()
        #expect(try t.rollbackctl("bake-window", "0").status == 0)
        let app = try LiveSwitchTests.serve(t, port)
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { LiveSwitchTests.version(port) == t.currentVersion })
        #expect(app.wait(upTo: 10) { app.record?.childReady == true })
        let result = try t.rollbackctl("promote")
        #expect(result.status == 1)
        #expect(result.stderr == "Error: Nothing is on probation in \(t.state).\n")
        #expect(Self.probation(t) == nil)
    }

    @Test func bakeWindowWritesAndRemovesTheOverride() throws {
        let (t, _) = try Self.server(window: 60)
        let path = t.state + "/analysis.override"
        let set = try t.rollbackctl("bake-window", "120")
        #expect(set.status == 0, "\(set)")
        #expect(set.stdout == "The bake window is now 120 s (the manifest says 60 s). The probation under way keeps its end; the next one gets 120 s.\n")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "analysis.window_s=120\n")
        let back = try t.rollbackctl("bake-window", "default")
        #expect(back.status == 0 && back.stdout == "The bake window is the manifest's again: 60 s. The probation under way keeps its end.\n")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test(arguments: [("abc", "'abc'"), ("-5", "'-5'"), ("604801", "'604801'"), ("1.5", "'1.5'")])
    func bakeWindowRefusesAValueThatIsNotSeconds(value: String, quoted: String) throws {
        let (t, _) = try Self.server()
        let result = try t.rollbackctl("bake-window", value)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("Error: SECONDS must be a whole number from 0 to 604800 or 'default', not \(quoted).\n"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: t.state + "/analysis.override"))
    }

    @Test func aSupervisorWithAnalysisSettingsItCannotUseRefusesToStart() throws {
        let t = try TestBundle(release: "1.3.0")
        try t.setManifestSetting("analysis.checks", "app")
        try t.setManifestSetting("analysis.check.app.kind", "app")
        let result = try t.launcher("serve", environment: ["SWITCHBACK_SUPERVISE": "1"])
        #expect(result.status == 70)
        #expect(result.stderr == "launcher: The manifest's analysis settings are refused: The analysis has checks but no analysis.window_s; write analysis.window_s=SECONDS (e.g. 60), the bake window. Rebuild the bundle with switchback-bundle --analysis FILE.\n")
    }

    @Test func bakeWindowWithoutAnalysisInTheManifestSaysHowToAddIt() throws {
        let t = try TestBundle(release: "1.3.0")
        let result = try t.rollbackctl("bake-window", "60")
        #expect(result.status == 1)
        #expect(result.stderr == "Error: The bundle's manifest configures no analysis (analysis.checks), so no build goes on probation; rebuild the bundle with switchback-bundle --analysis FILE.\n")
        let missing = try t.rollbackctl("bake-window")
        #expect(missing.status == 64)
    }
}
