import SwitchbackCore
import Testing

/// Argo Rollouts' verdict semantics, measurement by measurement.
@Suite struct AnalysisJudgeTests {
    func spec(failureLimit: Int = 0, inconclusiveLimit: Int = 0, consecutiveErrorLimit: Int? = nil,
              checks: [String] = ["http", "errors"], onFailure: [String: AnalysisCheck.FailureAction] = [:],
              dryRun: Bool = false) -> AnalysisSpec {
        AnalysisSpec(windowSeconds: 60, failureLimit: failureLimit, inconclusiveLimit: inconclusiveLimit,
                     consecutiveErrorLimit: consecutiveErrorLimit,
                     checks: checks.map { AnalysisCheck(name: $0, intervalMilliseconds: 10_000, kind: .app(AnalysisCheck.App()),
                                                        onFailure: onFailure[$0] ?? .rollback) },
                     dryRun: dryRun)
    }

    func measured(_ check: String, _ phase: MeasurementPhase, _ detail: String = "x") -> Measurement {
        Measurement(check: check, phase: phase, detail: detail)
    }

    @Test func oneFailedMeasurementFailsWithTheDefaultLimit() {
        var judge = AnalysisJudge(spec: spec())
        #expect(judge.record(measured("http", .successful)) == nil)
        let verdict = judge.record(measured("http", .failed, "31% of 58 probes failed (limit 5%) over 60 s"))
        #expect(verdict == .failed("http: 31% of 58 probes failed (limit 5%) over 60 s"))
        #expect(verdict?.word == "failed")
        // The first verdict sticks.
        #expect(judge.record(measured("errors", .successful)) == verdict)
        #expect(judge.finish() == verdict)
    }

    @Test func theFailureLimitAllowsThatManyFailures() {
        var judge = AnalysisJudge(spec: spec(failureLimit: 2))
        #expect(judge.record(measured("http", .failed)) == nil)
        #expect(judge.record(measured("errors", .failed)) == nil, "the limit counts per check")
        #expect(judge.record(measured("http", .successful)) == nil)
        #expect(judge.record(measured("http", .failed)) == nil)
        #expect(judge.record(measured("http", .failed, "p99 latency 412 ms over 58 probes (limit 250 ms)"))
            == .failed("http: p99 latency 412 ms over 58 probes (limit 250 ms) (3 failed measurements, failure_limit 2)"))
        #expect(judge.tallies["http"]?.failed == 3)
    }

    @Test func failuresWithinTheLimitStillPassAtTheEnd() {
        var judge = AnalysisJudge(spec: spec(failureLimit: 1))
        judge.record(measured("http", .failed))
        judge.record(measured("http", .successful))
        judge.record(measured("errors", .successful))
        #expect(judge.finish() == .passed("every check passed in the 60 s window (successful measurements: http 1 of 2, errors 1 of 1)"))
    }

    @Test func theInconclusiveLimit() {
        var judge = AnalysisJudge(spec: spec(inconclusiveLimit: 1))
        #expect(judge.record(measured("http", .inconclusive)) == nil)
        #expect(judge.record(measured("http", .inconclusive, "3 probes over 2 s, fewer than the 5 needed (min_probes)"))
            == .inconclusive("http: 3 probes over 2 s, fewer than the 5 needed (min_probes) (2 inconclusive measurements, inconclusive_limit 1)"))
        var strict = AnalysisJudge(spec: spec())
        #expect(strict.record(measured("errors", .inconclusive))?.word == "inconclusive", "the default limit is 0")
    }

    @Test func errorsWithoutALimitNeverFailTheAnalysis() {
        var judge = AnalysisJudge(spec: spec(checks: ["errors"]))
        for _ in 0..<100 {
            #expect(judge.record(measured("errors", .error, "Prometheus at http://127.0.0.1:9 could not be reached (connection refused)")) == nil)
        }
        #expect(judge.finish() == .inconclusive("errors: no successful measurement in the 60 s window (100 errors); last: Prometheus at http://127.0.0.1:9 could not be reached (connection refused)"))
    }

    @Test func consecutiveErrorsBeyondTheLimitFail() {
        var judge = AnalysisJudge(spec: spec(consecutiveErrorLimit: 2))
        #expect(judge.record(measured("errors", .error)) == nil)
        #expect(judge.record(measured("errors", .error)) == nil)
        #expect(judge.record(measured("errors", .successful)) == nil, "a success resets the run")
        #expect(judge.record(measured("errors", .error)) == nil)
        #expect(judge.record(measured("errors", .error)) == nil)
        #expect(judge.record(measured("http", .error)) == nil, "runs count per check")
        #expect(judge.record(measured("errors", .error, "the query returned no samples"))
            == .failed("errors: the query returned no samples (3 errors in a row, consecutive_error_limit 2)"))
        var zero = AnalysisJudge(spec: spec(consecutiveErrorLimit: 0))
        #expect(zero.record(measured("http", .error))?.word == "failed", "a limit of 0 fails at the first error")
    }

    @Test func theWindowEndsSuccessfulOnlyWhenEveryCheckSucceededOnce() {
        var judge = AnalysisJudge(spec: spec())
        judge.record(measured("http", .successful))
        #expect(judge.finish() == .inconclusive("errors: no measurement in the 60 s window"))
        judge.record(measured("errors", .error, "Prometheus at http://127.0.0.1:9 could not be reached (connection refused)"))
        #expect(judge.finish().word == "inconclusive")
        judge.record(measured("errors", .successful))
        #expect(judge.finish().word == "passed")
    }

    @Test func aWindowWithoutChecksPasses() {
        #expect(AnalysisJudge(spec: spec(checks: [])).finish() == .passed("no check failed in the 60 s window (no checks configured)"))
    }

    @Test func theAppsBadFailsAtOnce() {
        var judge = AnalysisJudge(spec: spec(failureLimit: 5))
        #expect(judge.recordAppBad("database schema mismatch") == .failed("app: reported bad: \"database schema mismatch\""))
        #expect(judge.record(measured("http", .successful)) == .failed("app: reported bad: \"database schema mismatch\""))
        var named = AnalysisJudge(spec: spec())
        #expect(named.recordAppBad("x", check: "self")?.sentence == "self: reported bad: \"x\"")
    }

    @Test func appFailureCounts() {
        let app = AnalysisCheck.App(maxFailures: 10)
        #expect(app.measurement(failures: 14, check: "app") == Measurement(check: "app", phase: .failed, detail: "14 failures reported (limit 10)"))
        #expect(app.measurement(failures: 10, check: "app").phase == .successful)
        #expect(app.measurement(failures: 1, check: "app").sentence == "app: 1 failure reported (limit 10)")
    }

    @Test func aCheckThatHoldsEndsTheAnalysisHeld() {
        var judge = AnalysisJudge(spec: spec(consecutiveErrorLimit: 1, onFailure: ["http": .hold]))
        #expect(judge.record(measured("http", .failed, "p99 latency 412 ms over 58 probes (limit 250 ms)"))
            == .held("http: p99 latency 412 ms over 58 probes (limit 250 ms) (on_failure=hold)"))
        var errors = AnalysisJudge(spec: spec(consecutiveErrorLimit: 0, onFailure: ["errors": .hold]))
        #expect(errors.record(measured("errors", .error))?.word == "held", "errors past the limit fail the check, and it holds")
        var app = AnalysisJudge(spec: spec(checks: ["app"], onFailure: ["app": .hold]))
        #expect(app.recordAppBad("schema mismatch") == .held("app: reported bad: \"schema mismatch\" (on_failure=hold)"))
    }

    @Test func aCheckThatRecordsDecidesNothingAndIsNamedAtTheEnd() {
        var judge = AnalysisJudge(spec: spec(consecutiveErrorLimit: 0, onFailure: ["errors": .record]))
        #expect(judge.record(measured("errors", .failed, "result[0] < 0.05 is false (0.31)")) == nil)
        #expect(judge.record(measured("errors", .error)) == nil)
        #expect(judge.record(measured("errors", .inconclusive)) == nil, "nor does it end the analysis inconclusive")
        #expect(judge.recordAppBad("x", check: "errors") == nil)
        judge.record(measured("http", .successful))
        // It never succeeded, and the analysis passes all the same: only the checks that act count.
        #expect(judge.finish() == .passed("no check that acts failed in the 60 s window (successful measurements: http 1 of 1, errors 0 of 4); recorded only: errors: reported bad: \"x\" (on_failure=record)"))
        var clean = AnalysisJudge(spec: spec(onFailure: ["errors": .record]))
        clean.record(measured("http", .successful))
        #expect(clean.finish().sentence.hasPrefix("every check passed"), "a check that records and never failed is not named")
    }

    @Test func aDryRunRecordsWhatItWouldHaveDone() {
        var rollback = AnalysisJudge(spec: spec(dryRun: true))
        #expect(rollback.record(measured("http", .failed, "31% of 58 probes failed (limit 5%) over 60 s"))
            == .wouldRollBack("would have rolled back: http: 31% of 58 probes failed (limit 5%) over 60 s"))
        var hold = AnalysisJudge(spec: spec(onFailure: ["errors": .hold], dryRun: true))
        #expect(hold.record(measured("errors", .failed, "y")) == .wouldHold("would have held: errors: y (on_failure=hold)"))
        let unmeasured = AnalysisJudge(spec: spec(dryRun: true))
        #expect(unmeasured.finish() == .wouldHold("would have held, inconclusive: http: no measurement in the 60 s window"))
        var good = AnalysisJudge(spec: spec(dryRun: true))
        good.record(measured("http", .successful))
        good.record(measured("errors", .successful))
        #expect(good.finish().word == "passed", "a dry run that passes passes")
    }

    @Test func verdictsReadBack() {
        let all: [AnalysisVerdict] = [.passed("a"), .failed("b c"), .held("e"), .inconclusive("d"), .wouldRollBack("f"), .wouldHold("g")]
        #expect(all.map(\.word) == AnalysisVerdict.words)
        for verdict in all {
            #expect(AnalysisVerdict(word: verdict.word, sentence: verdict.sentence) == verdict)
        }
        #expect(AnalysisVerdict(word: "successful", sentence: "s") == .passed("s"), "an earlier analyzer's word")
        #expect(AnalysisVerdict(word: "ok", sentence: "x") == nil)
        #expect(AnalysisVerdict.failed("http: x").description == "failed http: x")
    }
}
