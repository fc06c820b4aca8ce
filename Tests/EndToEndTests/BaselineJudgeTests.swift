import Foundation
import RollbackCtlKit
import SwitchbackCore
import SwitchbackTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 40's baseline beside canary, through the real binaries (docs/analysis.md, "Baseline
/// beside canary"): release 1.3.0 of the release fixture starts on its previous slot (1.2.0),
/// then rolls forward start-first; with `analysis.baseline=true` the 1.2.0 child keeps
/// serving beside 1.3.0 on the supervisor's socket for the window, the analyzer attributes
/// each probe to the child that accepted it (sock_diag and /proc, `AttributedProbe`) and
/// judges the two builds against each other. Both builds spend `work_ms` of CPU on every
/// answer (the sample's `misbehave` file), so a loaded host slows both alike.
@Suite(.serialized) struct BaselineJudgeTests {
    typealias Install = BakeWindowTests.Install

    /// The comparison and an http check of `GET /` every 40 ms whose absolute limits are far
    /// above both builds (a p99 of 10 s, beyond anything a probe with a 2 s timeout measures;
    /// 100% failed): only the comparison can fail a build. (At 1 s, a CI run loaded with the
    /// whole suite and the hog measured a p99 of 1.4 s and failed the good release on it.)
    static func compared(_ extra: [String: String] = [:]) -> [String: String] {
        ["analysis.baseline": "true",
         "analysis.checks": "http", "analysis.check.http.kind": "http", "analysis.check.http.url": "http://127.0.0.1:$PORT/",
         "analysis.check.http.probe_interval_ms": "40", "analysis.check.http.max_failure_percent": "100",
         "analysis.check.http.latency_limit_ms": "10000", "analysis.check.http.min_probes": "3"].merging(extra) { $1 }
    }

    /// The pid in the sample's `GET /` answer ("version V slot S pid N").
    static func answeringPID(port: Int) -> Int32? {
        guard case .ok(let body) = HTTPPoller.request(port: port, path: "/", timeout: .seconds(2)),
              let range = body.range(of: " pid ") else { return nil }
        return Int32(body[range.upperBound...].prefix { $0.isNumber })
    }

    /// Starts the install on its previous slot (1.2.0), then rolls forward to 1.3.0: returns
    /// once 1.3.0 is on probation beside the 1.2.0 child (the baseline's pid, the canary's).
    static func rollForwardCompared(_ install: Install) throws -> (baseline: Int32, canary: Int32) {
        let t = install.t
        #expect(try t.rollbackctl("rollback", "--reason", "start on the baseline").status == 0)
        try install.start()
        #expect(waitUntil(seconds: 30) { install.probation?.slot == .previous }, "\(install.stderr)")
        // The first start has no baseline, and says so.
        let first = try t.rollbackctl("status").stdout
        #expect(first.contains("  no baseline (analysis.baseline): no other build was serving when it started; judged by its absolute checks only\n"), "\(first)")
        #expect(try t.rollbackctl("rollforward", "--reason", "the release under test").status == 0)
        var pids: (Int32, Int32)?
        _ = waitUntil(seconds: 60) {
            if let record = install.probation, record.slot == .current,
               case .beside(let baseline, let canary, .previous, _, _)? = record.comparison {
                pids = (baseline, canary)
                return true
            }
            return false
        }
        let found = try #require(pids, "1.3.0 went on probation beside 1.2.0: \(install.stderr)")
        return found
    }

    // MARK: - A release 30% slower than its previous build

    @Test func aReleaseThirtyPercentSlowerThanItsBaselineIsRolledBackToTheBaselineWithinItsWindow() throws {
        let install = try Install(window: 20, Self.compared(), misbehave: "work_ms=10\nversion=1.3.0\ndelay_ms=3\n")
        let t = install.t
        let (baseline, canary) = try Self.rollForwardCompared(install)
        let status = try t.rollbackctl("status").stdout
        #expect(status.contains("  compared with the previous build (\(t.previousVersion)), pid \(baseline), serving beside it (analysis.baseline)\n"), "\(status)")
        #expect(try t.status().probation?.baseline?.pid == baseline)
        let record = try #require(install.ended(.current, upTo: 40), "\(install.stderr)")
        #expect(record.state == .failed, "\(record)")
        let sentence = try #require(record.result)
        print("1.3.0 (+3 ms on 10 ms of work) against 1.2.0 beside it, verdict \(Double(try #require(record.checks.first { $0.name == "baseline" }?.at) - record.startedAt) / 1000) s into its 20 s window: \(sentence)")
        #expect(sentence.contains(#/^baseline: score 50 \(pass 95, marginal 75\) over \d+ canary and \d+ baseline probes: http latency failed: /#), "\(sentence)")
        #expect(sentence.contains("http errors passed"), "\(sentence)")
        #expect(record.checks.first { $0.name == "http" }?.phase != "failed", "the absolute check did not fail it: \(record.checks)")

        // The baseline, already serving, takes over: no child of 1.2.0 is started again.
        #expect(waitUntil(seconds: 20) { Self.answeringPID(port: install.port) == baseline && kill(canary, 0) != 0 }, "\(install.stderr)")
        #expect(install.stderr.contains("the baseline serving beside the current slot (pid \(canary)), serves alone"), "\(install.stderr)")
        let history = try t.history()
        let failed = try #require(history.last { $0.kind == "probation_failed" }, "\(history)")
        #expect(failed.reason?.contains("failed its 20 s bake window: baseline: score 50") == true, "\(failed)")
        let rollback = try #require(history.last)
        #expect(rollback.kind == "switch" && rollback.to == "previous" && rollback.source == "auto", "\(history)")
        #expect(try t.health("current").verdict == "bad")
    }

    // MARK: - A loaded host: the baseline judge and an absolute threshold, side by side

    /// Four busy processes for the window slow both identical builds down alike: the
    /// comparison passes 1.3.0, while an absolute p99 limit of 12 ms (which catches the 30%
    /// slower release above: 13 ms against 10) rolls the same good release back.
    @Test func onAHostMadeSlowForBothTheJudgePassesAGoodReleaseAnAbsoluteLimitRollsBack() throws {
        let hog = try CPUHog(processes: 4)
        defer { hog.stop() }
        hog.pause()
        let compared = try Install(window: 6, Self.compared(), misbehave: "work_ms=10\n")
        _ = try Self.rollForwardCompared(compared)
        hog.resume()
        let judged = try #require(compared.ended(.current, upTo: 40), "\(compared.stderr)")
        hog.pause()
        compared.app?.stop()

        let absolute = try Install(window: 6, BakeWindowTests.httpCheck(["analysis.check.http.probe_interval_ms": "40",
                                                                         "analysis.check.http.latency_limit_ms": "12",
                                                                         "analysis.check.http.max_failure_percent": "100"]),
                                   misbehave: "work_ms=10\n")
        #expect(try absolute.t.rollbackctl("rollback", "--reason", "start on the previous build").status == 0)
        try absolute.start()
        #expect(waitUntil(seconds: 30) { absolute.probation?.slot == .previous }, "\(absolute.stderr)")
        hog.resume()
        #expect(try absolute.t.rollbackctl("rollforward", "--reason", "the release under test").status == 0)
        let limited = try #require(absolute.ended(.current, upTo: 60), "\(absolute.stderr)")
        hog.stop()
        print("""
            the same good release on a host made slow (4 busy processes), side by side:
              baseline judge:   \(judged.state.rawValue): \(judged.result ?? "")
                                last comparison: \(judged.checks.first { $0.name == "baseline" }?.sentence ?? "none")
              p99 limit 12 ms:  \(limited.state.rawValue): \(limited.result ?? "")
            """)
        #expect(judged.state == .passed, "\(judged)")
        #expect(judged.result?.contains("baseline ") == true, "\(judged)")
        #expect(limited.state == .failed, "\(limited)")
        #expect(limited.result?.contains(/http: p99 latency \d+ ms over \d+ probes \(limit 12 ms\)/) == true, "\(limited)")
    }

    // MARK: - Errors where the baseline has none

    @Test func aReleaseWithErrorsWhereItsBaselineHasNoneFails() throws {
        let install = try Install(window: 20, Self.compared(), misbehave: "version=1.3.0\nerror_percent=30\n")
        let (baseline, _) = try Self.rollForwardCompared(install)
        let record = try #require(install.ended(.current, upTo: 40), "\(install.stderr)")
        print("1.3.0 answering 500 to 30% against 1.2.0 answering none: \(record.result ?? "")")
        #expect(record.state == .failed, "\(record)")
        #expect(record.result?.contains(#/http errors failed: \d+ of \d+ \([\d.]+%\) against 0 of \d+ \(0%\) failed/#) == true, "\(record)")
        #expect(waitUntil(seconds: 20) { Self.answeringPID(port: install.port) == baseline }, "\(install.stderr)")
    }

    // MARK: - The app's own metrics, labelled by build

    /// The probes see nothing (they ask `GET /metrics`, which never misbehaves), but the
    /// traffic to `GET /` gets 500 from 30% of 1.3.0's answers: a real Prometheus scrapes each
    /// child's `/metrics` (one or the other, through the shared socket) and the error ratio,
    /// queried once per build every second, is compared as a series.
    @Test func theAppsOwnMetricsAreComparedBuildAgainstBuild() throws {
        let port = try unusedLocalPort()
        let prometheus = try PrometheusServer.start(scrapeTargets: ["127.0.0.1:\(port)"], scrapeIntervalSeconds: 1)
        defer { prometheus.stop() }
        var settings = Self.compared(["analysis.check.http.url": "http://127.0.0.1:$PORT/metrics"])
            .merging(BakeWindowTests.prometheusCheck(address: prometheus.address)) { $1 }
        settings["analysis.checks"] = "http,errors"
        settings["analysis.check.errors.success"] = "result[0] < 1"
        settings["analysis.check.errors.compare"] = "higher_is_worse"
        let install = try Install(window: 30, settings, misbehave: BakeWindowTests.thirtyPercent, port: port)
        let (baseline, _) = try Self.rollForwardCompared(install)
        let poller = try HTTPPoller(port: port, interval: .milliseconds(10), maxRequests: 100_000, maxDuration: .seconds(120))
        defer { _ = poller.stop() }
        let record = try #require(install.ended(.current, upTo: 60), "\(install.stderr)")
        print("1.3.0's own error ratio against 1.2.0's, from Prometheus: \(record.result ?? "")")
        #expect(record.state == .failed, "\(record)")
        let sentence = record.result ?? ""
        #expect(sentence.contains("http latency passed") && sentence.contains("http errors passed"), "the probes saw no difference: \(sentence)")
        #expect(sentence.contains(#/errors value failed: median 0\.\d+ against 0 over \d+ and \d+ measurements/#), "\(sentence)")
        #expect(waitUntil(seconds: 20) { Self.answeringPID(port: install.port) == baseline }, "\(install.stderr)")
    }

    // MARK: - Two identical builds

    /// 1.3.0 and 1.2.0 (the same sources) judged against each other in 20 windows of 3 s,
    /// alternately: each is the canary in 10 and the baseline in 10. Every window passes.
    @Test func twoIdenticalBuildsPassTwentyOfTwentyWindows() throws {
        let install = try Install(window: 3, Self.compared(["analysis.baseline.min_samples": "10"]), misbehave: "work_ms=2\n")
        let t = install.t
        _ = try Self.rollForwardCompared(install)
        var verdicts: [ProbationRecord] = []
        for round in 1...20 {
            let slot: BuildSlot = round % 2 == 1 ? .current : .previous
            if round > 1 {
                #expect(try t.rollbackctl(slot == .current ? "rollforward" : "rollback", "--reason", "window \(round)").status == 0)
            }
            var ended: ProbationRecord?
            _ = waitUntil(seconds: 40) {
                if let record = install.probation, record.slot == slot, record.state != .baking,
                   case .beside? = record.comparison, record.startedAt > (verdicts.last?.startedAt ?? 0) {
                    ended = record
                    return true
                }
                return false
            }
            let record = try #require(ended, "window \(round): \(install.stderr)")
            print("window \(round), \(slot.rawValue) as the canary: \(record.state.rawValue): \(record.checks.first { $0.name == "baseline" }?.sentence ?? "no comparison")")
            verdicts.append(record)
        }
        let passed = verdicts.filter { $0.state == .passed }.count
        print("two identical builds: \(passed) of \(verdicts.count) windows passed")
        #expect(passed == 20, "\(verdicts.map { "\($0.state.rawValue): \($0.result ?? "")" })")
    }
}

/// Busy processes (`sh -c 'while :; do :; done'`), stopped and continued with signals.
final class CPUHog {
    private var pids: [pid_t] = []

    init(processes: Int) throws {
        for _ in 0..<processes {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "while :; do :; done"]
            try process.run()
            pids.append(process.processIdentifier)
        }
    }

    func pause() { for pid in pids { kill(pid, SIGSTOP) } }
    func resume() { for pid in pids { kill(pid, SIGCONT) } }

    func stop() {
        for pid in pids {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        pids = []
    }

    deinit { stop() }
}
