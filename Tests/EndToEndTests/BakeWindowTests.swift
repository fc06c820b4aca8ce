import Foundation
import RollbackCtlKit
import SwitchbackCore
import SwitchbackTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 27's one-host acceptance, through the real binaries: release 1.3.0 of the release
/// fixture (its previous slot is release 1.2.0, built from the same sources), supervised with
/// the sample's HTTP server on a socket the supervisor owns, on probation from its first start
/// for a short bake window judged by the analyzer the supervisor spawns. 1.3.0 misbehaves on
/// purpose (`<data dir>/misbehave`, which 1.2.0 ignores: MisbehaviourTests); a real
/// Prometheus (PrometheusServer) scrapes the app's own `/metrics`; a client polls through every switch.
@Suite(.serialized) struct BakeWindowTests {
    /// A supervised release 1.3.0 on a free port with a bake window and checks.
    final class Install {
        let t: TestBundle
        let port: Int
        private(set) var app: SupervisedLauncher?

        /// `settings` may say `$PORT` for the app's port; `misbehave` goes into the data
        /// directory before anything starts.
        init(window: Int, _ settings: [String: String], misbehave: String? = nil, port: Int? = nil) throws {
            t = try TestBundle(release: "1.3.0")
            self.port = try port ?? unusedLocalPort()
            var all = ["supervise": "true", "supervise.listen": "127.0.0.1:\(self.port)",
                       "analysis.window_s": String(window), "analysis.interval_s": "1", "analysis.inconclusive_limit": "5"]
            all.merge(settings) { $1 }
            for (key, value) in all.sorted(by: { $0.key < $1.key }) {
                try t.setManifestSetting(key, value.replacingOccurrences(of: "$PORT", with: String(self.port)))
            }
            try FileManager.default.createDirectory(atPath: t.state + "/data", withIntermediateDirectories: true)
            if let misbehave { try misbehave.write(toFile: t.state + "/data/misbehave", atomically: true, encoding: .utf8) }
        }

        /// Starts the supervisor (`serve --http` on the port) and waits until something answers.
        @discardableResult
        func start(environment: [String: String] = [:]) throws -> SupervisedLauncher {
            let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: environment)
            self.app = app
            let port = port
            guard waitUntil(seconds: 60, { HTTPPoller.request(port: port, path: "/metrics", timeout: .seconds(2)).isOK }) else {
                throw TestFailure("the supervised sample did not answer on port \(port): \(app.stderr)")
            }
            return app
        }

        var stderr: String { app?.stderr ?? "" }

        /// The probation record the supervisor keeps; nil when there is none (or damaged).
        var probation: ProbationRecord? { (try? ProbationRecord.load(in: StateDirectory(path: t.state))) ?? nil }

        /// The probation of `slot`'s build once it has ended (the record a later one replaces).
        func ended(_ slot: BuildSlot, upTo seconds: Double) -> ProbationRecord? {
            var found: ProbationRecord?
            _ = waitUntil(seconds: seconds) {
                if let record = probation, record.slot == slot, record.state != .baking {
                    found = record
                    return true
                }
                return false
            }
            return found
        }

        /// The version answering `GET /` now (a 500 of the misbehaving build names none).
        var servingVersion: String? {
            if case .ok(let body) = HTTPPoller.request(port: port, path: "/", timeout: .seconds(2)) { return HTTPPoller.versionKey(of: body) }
            return nil
        }

        deinit {
            app?.stop()
            try? FileManager.default.removeItem(atPath: t.directory)
        }
    }

    /// An HTTP check of the app's `GET /`: a probe every 100 ms, judged every second over the
    /// last 3 s, failed above 5% failed probes.
    static func httpCheck(_ extra: [String: String] = [:]) -> [String: String] {
        ["analysis.checks": "http", "analysis.check.http.kind": "http", "analysis.check.http.url": "http://127.0.0.1:$PORT/",
         "analysis.check.http.probe_interval_ms": "100", "analysis.check.http.window_s": "3",
         "analysis.check.http.max_failure_percent": "5", "analysis.check.http.min_probes": "5"].merging(extra) { $1 }
    }

    /// The sample's own 5xx ratio for the build on probation, over the last 10 s.
    static let errorRatio = "sum(rate(sample_http_responses_total{code=~\"5..\",version=\"$version\"}[10s])) / sum(rate(sample_http_responses_total{version=\"$version\"}[10s]))"

    static func prometheusCheck(name: String = "errors", address: String, query: String = errorRatio) -> [String: String] {
        ["analysis.check.\(name).kind": "prometheus", "analysis.check.\(name).address": address,
         "analysis.check.\(name).query": query, "analysis.check.\(name).success": "result[0] < 0.05",
         "analysis.check.\(name).timeout_ms": "2000"]
    }

    static let thirtyPercent = "version=1.3.0\nerror_percent=30\n"

    // MARK: - A release that answers 500 to 30% of its requests

    @Test func aReleaseAnswering500To30PercentIsRolledBackWithinItsWindowWithoutARefusedConnection() throws {
        let install = try Install(window: 10, Self.httpCheck(), misbehave: Self.thirtyPercent)
        let t = install.t
        try install.start()
        let poller = try HTTPPoller(port: install.port, interval: .milliseconds(5), maxRequests: 100_000, maxDuration: .seconds(120))
        let baking = waitUntil(seconds: 30) { install.probation?.slot == .current }
        #expect(baking, "\(install.stderr)")
        let endsAt = try #require(install.probation?.endsAt)

        // Rolled back before the window would have ended.
        let rolledBack = waitUntil(seconds: max(1, Double(endsAt) / 1000 - Date().timeIntervalSince1970)) {
            install.servingVersion == t.previousVersion
        }
        #expect(rolledBack, "1.2.0 serves before the window ends: \(install.stderr)")
        #expect(waitUntil(seconds: 30) { install.servingVersion == t.previousVersion })
        // The old child drains; then a few more requests to the one left.
        #expect(waitUntil(seconds: 10) { poller.summary().versionsSeen.last == t.previousVersion })
        let settled = poller.summary().requests
        #expect(waitUntil(seconds: 10) { poller.summary().requests > settled + 50 })
        let summary = poller.stop()
        print("30% 500s, rolled back: \(summary)")
        #expect(summary.refused == 0 && summary.reset == 0 && summary.timedOut == 0, "no connection failed: \(summary)")
        #expect(summary.failed == summary.httpErrors, "\(summary)")
        #expect(summary.httpErrors > 0, "the misbehaving release answered 500s: \(summary)")
        #expect(summary.versionsSeen.last == t.previousVersion, "\(summary)")

        let history = try t.history()
        let failed = try #require(history.first { $0.kind == "probation_failed" }, "\(history)")
        let reason = try #require(failed.reason)
        #expect(reason.contains(/http: \d+(\.\d+)?% of \d+ probes failed \(limit 5%\) over \d+ s/), "\(reason)")
        let rollback = try #require(history.last { $0.kind == "switch" })
        #expect(rollback.to == "previous" && rollback.source == "auto", "\(history)")
        #expect(rollback.reason == reason, "\(rollback)")
        #expect(try t.health("current").verdict == "bad")
    }

    // MARK: - What a failed check does: a dry run, a hold

    /// The same release with `analysis.dry_run=true`: the window ends at the same verdict,
    /// recorded as what it would have done, and nothing is done: it keeps serving, marked
    /// good with a note, and the history, status, journald and the metrics say "would have
    /// rolled back" with the measurement.
    @Test func aDryRunKeepsTheReleaseAnswering500sAndSaysItWouldHaveRolledBack() throws {
        let install = try Install(window: 10, Self.httpCheck(["analysis.dry_run": "true"]), misbehave: Self.thirtyPercent)
        let t = install.t
        try FileManager.default.createDirectory(atPath: t.directory + "/metrics", withIntermediateDirectories: true)
        try t.setManifestSetting("metrics.textfile_dir", t.directory + "/metrics")
        let journal = try JournalListener(directory: t.directory)
        try install.start(environment: journal.environment)
        let record = try #require(install.ended(.current, upTo: 40), "\(install.stderr)")
        #expect(record.state == .wouldRollBack, "\(record)")
        let sentence = try #require(record.result)
        #expect(sentence.contains(/^would have rolled back: http: \d+(\.\d+)?% of \d+ probes failed \(limit 5%\) over \d+ s$/), "\(sentence)")

        #expect(waitUntil(seconds: 10) { install.servingVersion == t.currentVersion }, "it keeps serving: \(install.stderr)")
        let history = try t.history()
        #expect(!history.contains { $0.kind == "switch" || $0.kind == "probation_failed" }, "nothing was done: \(history)")
        let event = try #require(history.first { $0.kind == "probation_would_roll_back" }, "\(history)")
        #expect(event.reason == "the current build (\(t.currentVersion)) ended its 10 s bake window, a dry run: \(sentence)")
        let health = try t.health("current")
        #expect(health.verdict == "good" && health.note == "ended its 10 s bake window, a dry run that \(sentence)", "\(health)")

        let status = try t.rollbackctl("status").stdout
        print("a dry run's window, as status shows it:\n\(status)")
        #expect(status.contains("Probation: the current build (\(t.currentVersion)) ended its 10 s window, a dry run (started "), "\(status)")
        #expect(status.contains("): \(sentence). Nothing was done.\n"), "\(status)")
        #expect(try t.status().probation?.state == "would_roll_back")
        let metrics = try SupervisorProbationTests.metrics(t)
        #expect(metrics.contains("state=\"would_roll_back\",version=\"\(t.currentVersion)\"} 1\n"), "\(metrics)")
        #expect(metrics.contains(",result=\"would_roll_back\"} 1\n"), "\(metrics)")
        // Its probation_started came first.
        let entries = journal.receive(count: 2, within: 10).filter { $0["SWITCHBACK_EVENT"] == "probation_would_roll_back" }
        #expect(entries.first?["MESSAGE"] == "The current build (\(t.currentVersion)) ended its 10 s bake window, a dry run: \(sentence).", "\(entries)")
        #expect(entries.first?["MESSAGE_ID"] == "e7a3c5d1f9b24086a4c2e6b8d0f17a35" && entries.first?["PRIORITY"] == "4", "\(entries)")
    }

    /// The same release with hooks (docs/hooks.md): a command and a webhook to a real receiver
    /// get every event of the automatic rollback, in the history's order, the webhook's signed.
    @Test func theHooksGetEveryEventOfAnAutomaticRollbackInOrder() throws {
        let install = try Install(window: 10, Self.httpCheck(), misbehave: Self.thirtyPercent)
        let t = install.t
        let receiver = try RequestLogServer(status: 200, directory: t.directory)
        defer { receiver.stop() }
        try "s3cret\n".write(toFile: t.directory + "/hook.key", atomically: true, encoding: .utf8)
        chmod(t.directory + "/hook.key", 0o600)
        try "#!/bin/sh\ncat >> '\(t.directory)/hook.out'\n".write(toFile: t.directory + "/hook.sh", atomically: true, encoding: .utf8)
        chmod(t.directory + "/hook.sh", 0o755)
        try t.setManifestSetting("hooks.command", t.directory + "/hook.sh")
        try t.setManifestSetting("hooks.url", receiver.url("/events"))
        try t.setManifestSetting("hooks.secret_file", t.directory + "/hook.key")
        try install.start()
        #expect(waitUntil(seconds: 60) { install.servingVersion == t.previousVersion }, "\(install.stderr)")
        // The previous build, now serving, goes on probation in its turn: the last event.
        #expect(waitUntil(seconds: 30) { receiver.posts().contains { $0.body.contains("\"kind\":\"probation_started\",") && $0.body.contains("\"to\":\"previous\"") } },
                "\(receiver.posts().map(\.body))")
        let kinds = receiver.posts().compactMap { post in
            (try? JSONSerialization.jsonObject(with: Data(post.body.utf8)) as? [String: Any]).flatMap { "\($0["kind"] ?? "")>\($0["to"] ?? "")" }
        }
        let history = try t.history().map { "\($0.kind)>\($0.to)" }
        #expect(kinds == history, "the webhook got every event of the history, in its order")
        #expect(kinds.starts(with: ["probation_started>current", "probation_failed>current"]) && kinds.contains("switch>previous"), "\(kinds)")
        for post in receiver.posts() {
            let timestamp = post.headers["x-switchback-timestamp"] ?? ""
            #expect(post.headers["x-switchback-signature"] == "sha256=" + (try HookDeliveryTests.openSSLSignature(key: "s3cret", message: timestamp + "." + post.body)))
        }
        let lines = (try String(contentsOfFile: t.directory + "/hook.out", encoding: .utf8)).split(separator: "\n").map { String($0) + "\n" }
        #expect(lines == receiver.posts().map(\.body), "the command got the same events in the same order")
    }

    /// The same release with its check set to hold (`on_failure=hold`): the window ends held,
    /// the build keeps serving, and the operator's promote keeps it or abort rolls it back.
    @Test(arguments: ["promote", "abort"])
    func aCheckThatHoldsKeepsTheReleaseUntilTheOperatorEndsIt(command: String) throws {
        let install = try Install(window: 10, Self.httpCheck(["analysis.check.http.on_failure": "hold"]), misbehave: Self.thirtyPercent)
        let t = install.t
        try install.start()
        let record = try #require(install.ended(.current, upTo: 40), "\(install.stderr)")
        #expect(record.state == .held, "\(record)")
        #expect(record.result?.contains(/^http: \d+(\.\d+)?% of \d+ probes failed \(limit 5%\) over \d+ s \(on_failure=hold\)$/) == true, "\(record)")
        #expect(waitUntil(seconds: 10) { install.servingVersion == t.currentVersion }, "held, it serves: \(install.stderr)")
        let held = try #require(try t.history().first { $0.kind == "probation_held" })
        #expect(held.reason == "the current build (\(t.currentVersion)) is held by its 10 s bake window: \(record.result ?? "")")
        #expect(try !t.history().contains { $0.kind == "switch" })
        let status = try t.rollbackctl("status").stdout
        #expect(status.contains("Probation: the current build (\(t.currentVersion)) is held by its 10 s window: \(record.result ?? ""). It stays; run rollbackctl promote to keep it or rollbackctl abort to roll it back."), "\(status)")

        let result = try t.rollbackctl(command)
        #expect(result.status == 0, "\(result) \(install.stderr)")
        if command == "promote" {
            #expect(install.probation?.state == .promoted)
            #expect(try t.health("current").verdict == "good")
            #expect(waitUntil(seconds: 10) { install.servingVersion == t.currentVersion }, "it keeps serving")
        } else {
            #expect(waitUntil(seconds: 30) { install.servingVersion == t.previousVersion }, "\(install.stderr)")
            #expect(try t.health("current").verdict == "bad")
            #expect(try t.history().contains { $0.kind == "probation_aborted" && $0.source == "cli" })
        }
    }

    // MARK: - A release whose latency doubles

    @Test(arguments: [true, false])
    func aSlowReleaseIsRolledBackOnlyWithALatencyCheck(latencyChecked: Bool) throws {
        let latency = latencyChecked ? ["analysis.check.http.latency_limit_ms": "100"] : [:]
        let install = try Install(window: 8, Self.httpCheck(latency), misbehave: "version=1.3.0\ndelay_ms=200\n")
        let t = install.t
        try install.start()
        if latencyChecked {
            #expect(waitUntil(seconds: 40) { install.servingVersion == t.previousVersion }, "\(install.stderr)")
            let failed = try #require(try t.history().first { $0.kind == "probation_failed" })
            #expect(failed.reason?.contains(/http: p99 latency \d+ ms over \d+ probes \(limit 100 ms\)/) == true, "\(failed)")
            #expect(try t.health("current").verdict == "bad")
        } else {
            let record = try #require(install.ended(.current, upTo: 40), "\(install.stderr)")
            #expect(record.state == .passed, "\(record)")
            #expect(install.servingVersion == t.currentVersion, "no latency check, no rollback")
            #expect(try t.health("current").note == "passed its 8 s bake window")
            #expect(try !t.history().contains { $0.kind == "probation_failed" || $0.kind == "switch" })
        }
    }

    // MARK: - A healthy release, three checks

    /// An HTTP check with a latency limit, the app's 5xx ratio through a real Prometheus
    /// scraping its `/metrics`, and the app's own signal: a healthy release passes all three
    /// and is marked good when its window ends.
    @Test func aHealthyReleaseJudgedByThreeChecksIsMarkedGoodWhenItsWindowEnds() throws {
        let port = try unusedLocalPort()
        let prometheus = try PrometheusServer.start(scrapeTargets: ["127.0.0.1:\(port)"], scrapeIntervalSeconds: 1)
        defer { prometheus.stop() }
        var settings = Self.httpCheck(["analysis.check.http.latency_limit_ms": "500"])
            .merging(Self.prometheusCheck(address: prometheus.address)) { $1 }
        settings["analysis.checks"] = "http,errors,app"
        settings["analysis.check.app.kind"] = "app"
        settings["analysis.check.app.max_failures"] = "10"
        let install = try Install(window: 12, settings, port: port)
        let t = install.t
        try install.start()
        let record = try #require(install.ended(.current, upTo: 60), "\(install.stderr)")
        #expect(record.state == .passed, "\(record)")
        #expect(Set(record.checks.map(\.name)) == ["http", "errors", "app"], "\(record)")
        let errors = try #require(record.checks.first { $0.name == "errors" })
        #expect(errors.phase == "successful", "Prometheus saw a 0 error ratio: \(record)")
        #expect(install.servingVersion == t.currentVersion)

        let health = try t.health("current")
        #expect(health.verdict == "good" && health.note == "passed its 12 s bake window", "\(health)")
        let passed = try #require(try t.history().first { $0.kind == "probation_passed" })
        #expect(passed.reason?.hasPrefix("the current build (\(t.currentVersion)) passed its 12 s bake window") == true, "\(passed)")
        let status = try t.rollbackctl("status").stdout
        #expect(status.contains("Probation: the current build (\(t.currentVersion)) passed (12 s window"), "\(status)")
        let document = try #require(try t.status().probation)
        #expect(document.state == "passed")
    }

    // MARK: - Prometheus

    @Test func aRealPrometheusScrapingTheAppRollsBackTheReleaseAnswering500s() throws {
        let port = try unusedLocalPort()
        let prometheus = try PrometheusServer.start(scrapeTargets: ["127.0.0.1:\(port)"], scrapeIntervalSeconds: 1)
        defer { prometheus.stop() }
        var settings = Self.prometheusCheck(address: prometheus.address)
        settings["analysis.checks"] = "errors"
        let install = try Install(window: 30, settings, misbehave: Self.thirtyPercent, port: port)
        let t = install.t
        try install.start()
        // The traffic Prometheus sees the app answer.
        let poller = try HTTPPoller(port: port, interval: .milliseconds(10), maxRequests: 100_000, maxDuration: .seconds(120))
        #expect(waitUntil(seconds: 60) { install.servingVersion == t.previousVersion }, "\(install.stderr)\n\((try? String(contentsOfFile: prometheus.directory + "/prometheus.log", encoding: .utf8)) ?? "")")
        #expect(waitUntil(seconds: 10) { poller.summary().versionsSeen.last == t.previousVersion })
        let summary = poller.stop()
        #expect(summary.refused == 0 && summary.failed == summary.httpErrors, "\(summary)")

        let failed = try #require(try t.history().first { $0.kind == "probation_failed" }, "\(install.stderr)")
        // errors: result[0] < 0.05 is false (0.31)
        #expect(failed.reason?.contains(/errors: result\[0\] < 0.05 is false \(0\.\d+\)/) == true, "\(failed)")
        #expect(try t.health("current").verdict == "bad")
    }

    @Test func prometheusUnreachableForTheWholeWindowIsInconclusiveAndNeverRollsBack() throws {
        let nobody = try unusedLocalPort()
        var settings = Self.prometheusCheck(address: "http://127.0.0.1:\(nobody)")
        settings["analysis.checks"] = "errors"
        let install = try Install(window: 6, settings)
        let t = install.t
        try install.start()
        let record = try #require(install.ended(.current, upTo: 40), "\(install.stderr)")
        #expect(record.state == .inconclusive, "\(record)")
        let errors = try #require(record.checks.first { $0.name == "errors" })
        #expect(errors.phase == "error", "\(record)")
        #expect(errors.sentence == "errors: Prometheus at http://127.0.0.1:\(nobody) could not be reached (connection refused)", "\(errors)")

        #expect(install.servingVersion == t.currentVersion, "not rolled back")
        let history = try t.history()
        #expect(history.contains { $0.kind == "probation_inconclusive" }, "\(history)")
        #expect(!history.contains { $0.kind == "probation_failed" || $0.kind == "switch" }, "\(history)")
        #expect(try t.health("current").verdict == "good", "the start was good; the window decided nothing")
        let status = try t.rollbackctl("status").stdout
        #expect(status.contains("Probation: the current build (\(t.currentVersion)) ended its 6 s window inconclusive: "), "\(status)")
        #expect(status.contains("It stays; run rollbackctl promote to keep it or rollbackctl abort to roll it back."), "\(status)")
    }

    // MARK: - Bad input at run time

    /// A "Prometheus" that answers 200 with a body of the wrong shape: every measurement is an
    /// error, the window ends inconclusive, nothing is rolled back and nothing crashes.
    @Test(arguments: [
        (#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1700000000,"0.5"]]}]}}"#,
         "errors: the query returned a matrix (range vector), not an instant vector; "),
        ("this is not JSON", "errors: Prometheus at http://127.0.0.1:$PORT answered something that is not a Prometheus query result"),
    ])
    func aPrometheusAnswerOfTheWrongShapeIsAnErrorMeasurementNeverAPass(body: String, sentence: String) throws {
        let server = try LoopbackHTTPServer { _ in .answer(status: 200, body: body) }
        defer { server.stop() }
        var settings = Self.prometheusCheck(address: "http://127.0.0.1:\(server.port)")
        settings["analysis.checks"] = "errors"
        let install = try Install(window: 5, settings)
        let t = install.t
        let app = try install.start()
        let record = try #require(install.ended(.current, upTo: 40), "\(install.stderr)")
        #expect(record.state == .inconclusive, "\(record)")
        let errors = try #require(record.checks.first { $0.name == "errors" })
        #expect(errors.phase == "error", "\(record)")
        #expect(errors.sentence.hasPrefix(sentence.replacingOccurrences(of: "$PORT", with: String(server.port))), "\(errors)")
        #expect(install.servingVersion == t.currentVersion)
        #expect(!app.process.hasExited, "the supervisor still runs")
        #expect(!install.stderr.contains("Fatal error"), "\(install.stderr)")
        #expect(try !t.history().contains { $0.kind == "probation_failed" || $0.kind == "probation_passed" })
    }
}
