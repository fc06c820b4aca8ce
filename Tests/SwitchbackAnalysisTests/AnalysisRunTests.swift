import Foundation
import Synchronization
import SwitchbackAnalysis
import SwitchbackCore
import SwitchbackTestSupport
import Testing

/// Whole analyses against real servers: checks at their intervals, the verdict before the
/// deadline when a check fails, at the deadline otherwise.
@Suite struct AnalysisRunTests {
    /// What a run told its caller, and how long it took.
    struct Outcome {
        var verdict: AnalysisVerdict
        var events: [AnalysisRun.Event]
        var seconds: Double

        var measurements: [Measurement] {
            events.compactMap { if case .measurement(let m) = $0 { m } else { nil } }
        }
    }

    func run(_ settings: [String: String], seconds: Double, version: String = "1.2.0",
             during: (AnalysisRun) -> Void = { _ in }) throws -> Outcome {
        let spec = try #require(try AnalysisSpec.parse(settings))
        let analysis = AnalysisRun(spec: spec, variables: ["version": version])
        let events = Mutex<[AnalysisRun.Event]>([])
        let started = Date()
        during(analysis)
        let verdict = analysis.run(endingAt: nowMilliseconds() + Int64(seconds * 1000)) { event in
            events.withLock { $0.append(event) }
        }
        let told = events.withLock { $0 }
        #expect(told.last == .verdict(verdict), "the verdict is the last event")
        return Outcome(verdict: verdict, events: told, seconds: Date().timeIntervalSince(started))
    }

    func settings(window: Int = 3, _ checks: [String: [String: String]]) -> [String: String] {
        var settings = ["analysis.window_s": String(window), "analysis.interval_s": "1",
                        "analysis.checks": checks.keys.sorted().joined(separator: ",")]
        for (name, fields) in checks {
            for (field, value) in fields { settings["analysis.check.\(name).\(field)"] = value }
        }
        return settings
    }

    @Test func againstARealPrometheus() throws {
        let fixture = try PrometheusFixture()
        defer { fixture.stop() }
        let prometheus = fixture.prometheus.address
        let errors = ["kind": "prometheus", "address": prometheus, "query": "sample_error_ratio{version=\"$version\"}",
                      "success": "result[0] < 0.05"]
        let web = ["kind": "http", "url": prometheus + "/-/healthy", "probe_interval_ms": "100", "min_probes": "3"]

        // Healthy: every check succeeds; the verdict comes at the deadline.
        // (5 s: a busy machine's slow query still gets its successful measurement in the window.)
        let healthy = try run(settings(window: 5, ["errors": errors, "web": web, "app": ["kind": "app", "max_failures": "5"]]), seconds: 5) {
            $0.reportAppFailures(2)
        }
        #expect(healthy.verdict.word == "passed", "\(healthy.verdict)")
        #expect(healthy.verdict.sentence.hasPrefix("every check passed in the 5 s window (successful measurements: app "), "\(healthy.verdict)")
        #expect(healthy.seconds >= 4.5)
        let names = Set(healthy.measurements.map(\.check))
        #expect(names == ["errors", "web", "app"])
        #expect(healthy.measurements.contains(Measurement(check: "errors", phase: .successful, detail: "result[0] < 0.05 is true (0.01)")))
        #expect(healthy.measurements.contains(Measurement(check: "app", phase: .successful, detail: "2 failures reported (limit 5)")))
        #expect(healthy.measurements.contains { $0.check == "web" && $0.phase == .successful && $0.detail.hasPrefix("0% of ") })

        // A bad build's query fails: the verdict comes at its first measurement, long before the deadline.
        let bad = try run(settings(window: 60, ["errors": errors]), seconds: 60, version: "1.3.0")
        #expect(bad.verdict == .failed("errors: result[0] < 0.05 is false (0.31)"))
        #expect(bad.seconds < 30)

        // Every probe answered 404: failed.
        var notFound = web
        notFound["url"] = prometheus + "/no-such-page"
        let failing = try run(settings(window: 60, ["web": notFound]), seconds: 60)
        #expect(failing.verdict.word == "failed")
        #expect(failing.verdict.sentence.hasPrefix("web: 100% of "), "\(failing.verdict)")
        #expect(failing.verdict.sentence.hasSuffix(" probes failed (limit 5%) over 1 s"), "\(failing.verdict)")
        #expect(failing.seconds < 30)

        // A latency limit no answer can meet (1 ms at the 1st percentile is possible; 0.5 is not allowed):
        // judged from real latencies, the failure names the percentile.
        var slow = web
        slow["latency_limit_ms"] = "1"
        slow["latency_percentile"] = "100"
        slow["probe_interval_ms"] = "50"
        let latency = try run(settings(window: 3, ["web": slow]), seconds: 3)
        if latency.verdict.word == "failed" {
            #expect(latency.verdict.sentence.hasPrefix("web: p100 latency "), "\(latency.verdict)")
            #expect(latency.verdict.sentence.hasSuffix(" probes (limit 1 ms)"), "\(latency.verdict)")
        } else {
            // Every answer came within 1 ms (a fast loopback): then the measurement says so.
            #expect(latency.measurements.allSatisfy { $0.phase == .successful }, "\(latency.measurements)")
        }
    }

    /// The end of the window is judged too: a Prometheus check 2 s apart over a 6 s window is
    /// measured at 2, 4 and 6 s (issue 40: a rollout's 18 s pause at 6 s got 2 measurements, the
    /// last interval never judged).
    @Test func theEndOfTheWindowIsMeasured() throws {
        let fixture = try PrometheusFixture()
        defer { fixture.stop() }
        let check = ["kind": "prometheus", "address": fixture.prometheus.address, "query": "vector(0)", "success": "result[0] < 1",
                     "interval_s": "2"]
        let outcome = try run(settings(window: 6, ["errors": check]), seconds: 6)
        #expect(outcome.verdict.word == "passed", "\(outcome.verdict)")
        #expect(outcome.measurements.count == 3, "\(outcome.measurements)")
        #expect(outcome.measurements.allSatisfy { $0.phase == .successful }, "\(outcome.measurements)")
    }

    @Test func prometheusUnreachableForTheWholeWindowIsInconclusive() throws {
        let port = try freeLoopbackPort()
        let errors = ["kind": "prometheus", "address": "http://127.0.0.1:\(port)", "query": "up", "success": "result[0] == 1"]
        let outcome = try run(settings(window: 3, ["errors": errors]), seconds: 3)
        guard case .inconclusive(let sentence) = outcome.verdict else {
            Issue.record("not inconclusive: \(outcome.verdict)")
            return
        }
        #expect(sentence.hasPrefix("errors: no successful measurement in the 3 s window ("), "\(sentence)")
        #expect(sentence.hasSuffix("; last: Prometheus at http://127.0.0.1:\(port) could not be reached (connection refused)"), "\(sentence)")
        #expect(outcome.measurements.allSatisfy { $0.phase == .error })
        #expect(outcome.seconds >= 2.5)
    }

    @Test func consecutiveErrorsBeyondTheLimitFail() throws {
        let port = try freeLoopbackPort()
        var settings = settings(window: 60, ["errors": ["kind": "prometheus", "address": "http://127.0.0.1:\(port)", "query": "up", "success": "result[0] == 1"]])
        settings["analysis.consecutive_error_limit"] = "1"
        let outcome = try run(settings, seconds: 60)
        #expect(outcome.verdict == .failed("errors: Prometheus at http://127.0.0.1:\(port) could not be reached (connection refused) (2 errors in a row, consecutive_error_limit 1)"))
        #expect(outcome.seconds < 30)
    }

    @Test func anHTTPCheckAgainstAPortNothingListensOnFails() throws {
        let port = try freeLoopbackPort()
        let outcome = try run(settings(window: 60, ["web": ["kind": "http", "url": "http://127.0.0.1:\(port)/", "probe_interval_ms": "100"]]), seconds: 60)
        #expect(outcome.verdict.word == "failed")
        #expect(outcome.verdict.sentence.hasPrefix("web: 100% of "), "\(outcome.verdict)")
    }

    @Test func theAppsBadFailsAtOnce() throws {
        let outcome = try run(settings(window: 60, ["app": ["kind": "app"]]), seconds: 60) { analysis in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { analysis.reportAppBad("database schema mismatch") }
        }
        #expect(outcome.verdict == .failed("app: reported bad: \"database schema mismatch\""))
        #expect(outcome.seconds < 10)
    }

    @Test func tooManyAppFailuresFail() throws {
        let outcome = try run(settings(window: 60, ["app": ["kind": "app", "max_failures": "10"]]), seconds: 60) {
            $0.reportAppFailures(14)
        }
        #expect(outcome.verdict == .failed("app: 14 failures reported (limit 10)"))
    }

    @Test func stoppingEndsTheRunWithoutAVerdictEvent() throws {
        let spec = try #require(try AnalysisSpec.parse(settings(window: 60, ["app": ["kind": "app"]])))
        let analysis = AnalysisRun(spec: spec)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { analysis.stop() }
        let events = Mutex<[AnalysisRun.Event]>([])
        let verdict = analysis.run(endingAt: nowMilliseconds() + 60_000) { event in events.withLock { $0.append(event) } }
        #expect(verdict == .inconclusive("the analysis was stopped before its window ended"))
        #expect(events.withLock { $0 }.allSatisfy { if case .verdict = $0 { false } else { true } })
    }

    @Test func aWindowWithoutChecksPassesAtItsEnd() throws {
        let outcome = try run(["analysis.window_s": "1"], seconds: 1)
        #expect(outcome.verdict == .passed("no check failed in the 1 s window (no checks configured)"))
    }
}
