@testable import SwitchbackCore
import SwitchbackTestSupport
import Testing

/// The baseline comparison's statistics against SciPy 1.17.1's figures for the same input
/// (`mannwhitneyu(c, b, alternative='greater', method='asymptotic', use_continuity=True)`,
/// `fisher_exact([[cf, ct - cf], [bf, bt - bf]], alternative='greater')`, and numpy's median
/// of `subtract.outer(c, b)`), then the judge's metrics, score and sentences.
@Suite struct BaselineStatisticsTests {
    typealias Statistics = BaselineStatistics
    typealias Sample = BaselineComparison.Sample

    /// `actual` within `relative` of `expected` (relative to its size).
    func close(_ actual: Double, _ expected: Double, relative: Double = 1e-9) -> Bool {
        abs(actual - expected) <= relative * abs(expected)
    }

    // MARK: Mann–Whitney U

    @Test func mannWhitneyWithoutTies() {
        let canary = [12.1, 14.3, 11.8, 15.2, 13.7, 16.0, 12.9, 14.8]
        let baseline = [10.2, 11.5, 9.8, 12.4, 10.9, 11.1, 13.0, 10.5]
        let test = Statistics.mannWhitneyGreater(canary: canary, baseline: baseline)
        #expect(test.u == 59)
        #expect(close(test.pValue, 0.0026924700000735156), "p \(test.pValue)")
        #expect(close(test.z, 2.78305666700567, relative: 1e-9), "z \(test.z)")
        // The other way round the alternative does not hold.
        #expect(Statistics.mannWhitneyGreater(canary: baseline, baseline: canary).pValue > 0.99)
    }

    @Test func mannWhitneyWithHeavyTies() {
        let canary: [Double] = [1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 5, 2]
        let baseline: [Double] = [1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 1, 3]
        let test = Statistics.mannWhitneyGreater(canary: canary, baseline: baseline)
        #expect(test.u == 94.5)
        #expect(close(test.pValue, 0.09681769446624955), "p \(test.pValue)")
        // Three values only: the tie correction carries the variance.
        let three = Statistics.mannWhitneyGreater(canary: [Double](repeating: 1, count: 5) + [Double](repeating: 2, count: 10) + [Double](repeating: 3, count: 15),
                                                  baseline: [Double](repeating: 1, count: 10) + [Double](repeating: 2, count: 10) + [Double](repeating: 3, count: 10))
        #expect(three.u == 550)
        #expect(close(three.pValue, 0.05792884721638173), "p \(three.pValue)")
    }

    @Test func identicalSamplesTellNothingApart() {
        let values = [10.0, 11.0, 12.0, 13.0, 11.0, 10.5, 12.5]
        let test = Statistics.mannWhitneyGreater(canary: values, baseline: values)
        #expect(test.u == 24.5)
        #expect(close(test.pValue, 0.5259000712907062), "p \(test.pValue)")
        #expect(test.pValue >= 0.5)
        // Every value equal: no variance, p 1; nothing on one side: p 1.
        #expect(Statistics.mannWhitneyGreater(canary: [5, 5, 5], baseline: [5, 5]) == .init(u: 3, z: 0, pValue: 1))
        #expect(Statistics.mannWhitneyGreater(canary: [], baseline: [1, 2]).pValue == 1)
    }

    @Test func aClearlySlowerCanary() {
        let canary = (0..<30).map { 20 + Double($0) }
        let baseline = (0..<30).map { Double($0) }
        let test = Statistics.mannWhitneyGreater(canary: canary, baseline: baseline)
        #expect(test.u == 850)
        #expect(close(test.pValue, 1.739869936231424e-09, relative: 1e-6), "p \(test.pValue)")
        #expect(test.pValue < 1e-6)
        #expect(close(Statistics.mannWhitneyGreater(canary: baseline, baseline: canary).pValue, 0.9999999984096084))
    }

    // MARK: Fisher's exact test

    @Test func fisherWhenTheBaselineHasNoFailures() {
        // Kayenta's judge cannot answer this one; the hypergeometric tail can.
        let p = Statistics.fisherGreater(canaryFailures: 6, canaryTotal: 20, baselineFailures: 0, baselineTotal: 20)
        #expect(close(p, 0.0100980100980101), "p \(p)")
        #expect(Statistics.fisherGreater(canaryFailures: 1, canaryTotal: 1, baselineFailures: 0, baselineTotal: 1) == 0.5)
    }

    @Test func fisherWithoutFailuresOrWithFewerInTheCanary() {
        #expect(Statistics.fisherGreater(canaryFailures: 0, canaryTotal: 20, baselineFailures: 0, baselineTotal: 20) == 1)
        #expect(Statistics.fisherGreater(canaryFailures: 0, canaryTotal: 20, baselineFailures: 6, baselineTotal: 20) == 1)
        let fewer = Statistics.fisherGreater(canaryFailures: 2, canaryTotal: 100, baselineFailures: 3, baselineTotal: 100)
        #expect(close(fewer, 0.8156646175037625), "p \(fewer)")
    }

    @Test func fisherSmallAndLargeTables() {
        let small = Statistics.fisherGreater(canaryFailures: 3, canaryTotal: 100, baselineFailures: 2, baselineTotal: 100)
        #expect(close(small, 0.5), "p \(small)")
        let even = Statistics.fisherGreater(canaryFailures: 5, canaryTotal: 10, baselineFailures: 5, baselineTotal: 10)
        #expect(close(even, 0.6718591006516703), "p \(even)")
        let large = Statistics.fisherGreater(canaryFailures: 300, canaryTotal: 10_000, baselineFailures: 250, baselineTotal: 10_000)
        #expect(close(large, 0.01701297510062044, relative: 1e-8), "p \(large)")
        // lgamma of totals of 200,000 loses a few digits, not the answer.
        let huge = Statistics.fisherGreater(canaryFailures: 1200, canaryTotal: 100_000, baselineFailures: 1000, baselineTotal: 100_000)
        #expect(close(huge, 9.819753401194035e-06, relative: 1e-6), "p \(huge)")
    }

    // MARK: Hodges–Lehmann and the median

    @Test func hodgesLehmannShiftIsTheMedianOfThePairwiseDifferences() {
        // Differences 1, 0, 2, 1, 3, 2: median 1.5.
        #expect(Statistics.hodgesLehmannShift(canary: [1, 2, 3], baseline: [0, 1]) == 1.5)
        let canary = [12.1, 14.3, 11.8, 15.2, 13.7, 16.0, 12.9, 14.8]
        let baseline = [10.2, 11.5, 9.8, 12.4, 10.9, 11.1, 13.0, 10.5]
        #expect(close(Statistics.hodgesLehmannShift(canary: canary, baseline: baseline), 2.75, relative: 1e-12))
        #expect(Statistics.hodgesLehmannShift(canary: [], baseline: [1]) == 0)
    }

    @Test func hodgesLehmannShiftKeepsTheMostRecentValuesPastTheBound() {
        func repeated(_ value: Double, _ count: Int) -> [Double] { [Double](repeating: value, count: count) }
        // 1,100 × 1,000 pairs: the last 500 of each, the canary's all 10 (all 1,100: median 0).
        #expect(Statistics.hodgesLehmannShift(canary: repeated(0, 600) + repeated(10, 500), baseline: repeated(0, 1000)) == 10)
        // 3,000 × 100: the last 2,500 canary values, 1,000 of them 10 (all 3,000: median 5; the last 500: 10).
        let canary = repeated(10, 1000) + repeated(0, 1500) + repeated(10, 500)
        #expect(Statistics.hodgesLehmannShift(canary: canary, baseline: repeated(0, 100)) == 0)
    }

    @Test func median() {
        #expect(Statistics.median([]) == nil)
        #expect(Statistics.median([3, 1, 2]) == 2)
        #expect(Statistics.median([4, 1, 3, 2]) == 2.5)
    }

    // MARK: The comparison

    /// `count` probes around `median` ms (noise of about 1 ms: four uniform draws summed), `failPercent` of them failed.
    func samples(_ generator: inout SeededGenerator, count: Int, median: Double, failPercent: UInt64 = 0) -> [Sample] {
        func unit() -> Double { Double(generator.next() >> 11) / Double(UInt64(1) << 53) }
        return (0..<count).map { _ in
            let noise = (unit() + unit() + unit() + unit() - 2) * 1.7
            return Sample(isSuccess: !generator.chance(failPercent), latencyMilliseconds: median + noise)
        }
    }

    @Test func aCanaryThirtyPercentSlowerFailsLatency() throws {
        var generator = SeededGenerator(seed: 1)
        let canary = samples(&generator, count: 61, median: 13)
        let baseline = samples(&generator, count: 58, median: 10)
        let settings = BaselineSettings()
        let results = try #require(BaselineComparison.compare(check: "http", canary: canary, baseline: baseline, settings: settings))
        #expect(results.map(\.metric) == ["latency", "errors"])
        #expect(results.map(\.passed) == [false, true])
        #expect(results[0].pValue < 1e-6)
        let (score, measurement) = BaselineComparison.measurement(name: "baseline", results: results, settings: settings, counts: (61, 58))
        #expect(score == 50)
        #expect(measurement.phase == .failed)
        #expect(measurement.sentence == "baseline: score 50 (pass 95, marginal 75) over 61 canary and 58 baseline probes: "
            + "http latency failed: median 12.7 ms against 10.1 ms, shift +2.8 ms (+28.3%, limit +10%), Mann-Whitney U 3480, "
            + "p < 0.0001 (below 0.05); http errors passed: 0 of 61 against 0 of 58 failed, Fisher p 1")
    }

    /// Fixed latencies, every figure checked with SciPy: U 423, p 1.9e-07, medians 11.5 and
    /// 10, shift 1.5; Fisher p for 2 of 21 against 0 of 21 is 0.2439.
    @Test func theSentenceSaysWhatWasMeasured() throws {
        let canary = (0..<21).map { Sample(isSuccess: $0 % 10 != 3, latencyMilliseconds: 10.5 + 0.1 * Double($0)) }
        let baseline = (0..<21).map { Sample(isSuccess: true, latencyMilliseconds: 9.0 + 0.1 * Double($0)) }
        let results = try #require(BaselineComparison.compare(check: "web", canary: canary, baseline: baseline, settings: BaselineSettings()))
        #expect(results[0] == .init(check: "web", metric: "latency", passed: false,
                                    detail: "median 11.5 ms against 10 ms, shift +1.5 ms (+15%, limit +10%), Mann-Whitney U 423, p < 0.0001 (below 0.05)",
                                    pValue: results[0].pValue))
        #expect(close(results[0].pValue, 1.8605825824566027e-07, relative: 1e-6))
        #expect(results[1].clause == "web errors passed: 2 of 21 (9.5%) against 0 of 21 (0%) failed, +9.5 points (limit +0), Fisher p 0.24")
        #expect(close(results[1].pValue, 0.2439024390243902))
        // A slowdown limit above the shift passes the same probes.
        let lenient = try #require(BaselineComparison.compare(check: "web", canary: canary, baseline: baseline,
                                                              settings: BaselineSettings(maxSlowdownPercent: 20)))
        #expect(lenient[0].passed)
        #expect(lenient[0].detail.hasSuffix("shift +1.5 ms (+15%, limit +20%), Mann-Whitney U 423, p < 0.0001 (below 0.05)"))
    }

    @Test func identicalDistributionsPassTwentyDrawsOfTwenty() throws {
        // Over 5,000 seeds of these draws 15 failed (errors, each a chance 2% vs 2%), none on latency.
        for seed in UInt64(100)..<120 {
            var generator = SeededGenerator(seed: seed)
            let canary = samples(&generator, count: 60, median: 10, failPercent: 2)
            let baseline = samples(&generator, count: 60, median: 10, failPercent: 2)
            let results = try #require(BaselineComparison.compare(check: "http", canary: canary, baseline: baseline, settings: BaselineSettings()))
            let (score, measurement) = BaselineComparison.measurement(name: "baseline", results: results, settings: BaselineSettings(), counts: (60, 60))
            #expect(score == 100, "seed \(seed): \(measurement.sentence)")
            #expect(measurement.phase == .successful, "seed \(seed)")
        }
    }

    @Test func aFasterCanaryPasses() throws {
        var generator = SeededGenerator(seed: 7)
        let canary = samples(&generator, count: 40, median: 7)
        let baseline = samples(&generator, count: 40, median: 10, failPercent: 20)
        let results = try #require(BaselineComparison.compare(check: "http", canary: canary, baseline: baseline, settings: BaselineSettings()))
        #expect(results.map(\.passed) == [true, true])
        #expect(results[0].pValue > 0.999)
        #expect(results[0].detail.contains("shift -"))
    }

    @Test func errorsThirtyPercentAgainstNoneFail() throws {
        var generator = SeededGenerator(seed: 3)
        // 18 of 60 refused (no answer, no latency); the others as fast as the baseline.
        let canary = samples(&generator, count: 60, median: 10).enumerated().map { index, sample in
            index % 10 < 3 ? Sample(isSuccess: false, latencyMilliseconds: nil) : sample
        }
        let baseline = samples(&generator, count: 60, median: 10)
        let results = try #require(BaselineComparison.compare(check: "http", canary: canary, baseline: baseline, settings: BaselineSettings()))
        #expect(results[0].passed)
        #expect(results[1] == .init(check: "http", metric: "errors", passed: false,
                                    detail: "18 of 60 (30%) against 0 of 60 (0%) failed, +30 points (limit +0), Fisher p < 0.0001 (below 0.05)",
                                    pValue: results[1].pValue))
        #expect(close(results[1].pValue, 8.511928896976649e-07, relative: 1e-8))
        let (score, measurement) = BaselineComparison.measurement(name: "baseline", results: results, settings: BaselineSettings(), counts: (60, 60))
        #expect(score == 50)
        #expect(measurement.phase == .failed)
        // Allowed 30 points more, the same failures pass; 3 of 60 against 0 is not significant (p 0.12).
        let lenient = try #require(BaselineComparison.compare(check: "http", canary: canary, baseline: baseline,
                                                              settings: BaselineSettings(maxErrorIncreasePercent: 30)))
        #expect(lenient[1].passed)
        let few = (0..<60).map { Sample(isSuccess: $0 >= 3, latencyMilliseconds: 10) }
        let fewResults = try #require(BaselineComparison.compare(check: "http", canary: few, baseline: baseline, settings: BaselineSettings()))
        #expect(fewResults[1].passed)
        #expect(close(fewResults[1].pValue, 0.12184873949579833))
    }

    @Test func aCanaryThatNeverAnswersIsJudgedOnErrorsAlone() throws {
        var generator = SeededGenerator(seed: 5)
        let canary = [Sample](repeating: Sample(isSuccess: false, latencyMilliseconds: nil), count: 12)
        let baseline = samples(&generator, count: 12, median: 10)
        let results = try #require(BaselineComparison.compare(check: "http", canary: canary, baseline: baseline, settings: BaselineSettings()))
        #expect(results[0] == .init(check: "http", metric: "latency", passed: true,
                                    detail: "too few answers to compare latency (canary 0, baseline 12)", pValue: 1))
        #expect(!results[1].passed)
        #expect(BaselineComparison.measurement(name: "baseline", results: results, settings: BaselineSettings(), counts: (12, 12)).measurement.phase == .failed)
    }

    @Test func tooFewSamplesIsNoComparisonYet() {
        var generator = SeededGenerator(seed: 9)
        let baseline = samples(&generator, count: 12, median: 10)
        #expect(BaselineComparison.compare(check: "http", canary: samples(&generator, count: 9, median: 30),
                                           baseline: baseline, settings: BaselineSettings()) == nil)
        #expect(BaselineComparison.compare(check: "http", canary: samples(&generator, count: 10, median: 30),
                                           baseline: baseline, settings: BaselineSettings()) != nil)
        let (score, measurement) = BaselineComparison.measurement(name: "baseline", results: [], settings: BaselineSettings(), counts: (9, 12))
        #expect(score == nil)
        #expect(measurement == Measurement(check: "baseline", phase: .inconclusive,
                                           detail: "fewer than 10 probes of each build so far (canary 9, baseline 12; min_samples 10)"))
    }

    @Test func aMarginalScoreIsInconclusive() {
        func result(_ check: String, _ metric: String, _ passed: Bool) -> BaselineComparison.MetricResult {
            .init(check: check, metric: metric, passed: passed, detail: "x", pValue: passed ? 0.5 : 0.001)
        }
        // Two http checks, one latency failed: 3 of 4, score 75 (at the marginal threshold, below pass).
        let results = [result("web", "latency", false), result("web", "errors", true),
                       result("api", "latency", true), result("api", "errors", true)]
        let (score, measurement) = BaselineComparison.measurement(name: "baseline", results: results, settings: BaselineSettings(), counts: (40, 40))
        #expect(score == 75)
        #expect(measurement.phase == .inconclusive)
        #expect(measurement.detail == "score 75 (pass 95, marginal 75) over 40 canary and 40 baseline probes: "
            + "web latency failed: x; web errors passed: x; api latency passed: x; api errors passed: x")
        let strict = BaselineSettings(marginalScore: 80)
        #expect(BaselineComparison.measurement(name: "baseline", results: results, settings: strict, counts: (40, 40)).measurement.phase == .failed)
        let lenient = BaselineSettings(passScore: 75)
        #expect(BaselineComparison.measurement(name: "baseline", results: results, settings: lenient, counts: (40, 40)).measurement.phase == .successful)
        // Six metrics, five passed: 83.3.
        let six = results + [result("admin", "latency", true), result("admin", "errors", true)]
        #expect(BaselineComparison.measurement(name: "b", results: six, settings: BaselineSettings(), counts: (1, 1)).measurement.detail.hasPrefix("score 83.3 (pass 95"))
    }

    @Test func pValuesReadWithTwoSignificantDigits() {
        #expect(BaselineComparison.pValue(1) == "1")
        #expect(BaselineComparison.pValue(0.9999) == "1")
        #expect(BaselineComparison.pValue(0.5259) == "0.53")
        #expect(BaselineComparison.pValue(0.034) == "0.034")
        #expect(BaselineComparison.pValue(0.0026924700000735156) == "0.0027")
        #expect(BaselineComparison.pValue(0.0001) == "0.0001")
        #expect(BaselineComparison.pValue(0.00012) == "0.00012")
        #expect(BaselineComparison.pValue(0.000099) == "< 0.0001")
        #expect(BaselineComparison.pValue(1.7e-9) == "< 0.0001")
    }

    // MARK: - A compared Prometheus check's series

    @Test func aSeriesWorseThanTheBaselinesFailsAndSaysByHowMuch() throws {
        let canary = [0.29, 0.31, 0.30, 0.28, 0.32, 0.30]
        let baseline = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        let result = try #require(BaselineComparison.compareSeries(check: "errors", canary: canary, baseline: baseline, lowerIsWorse: false, settings: BaselineSettings()))
        #expect(!result.passed && result.pValue < 0.01)
        #expect(result.clause.hasPrefix("errors value failed: median 0.3 against 0 over 6 and 6 measurements, +0.3 where the baseline's median is 0 (limit +10%), Mann-Whitney U 36, p "), "\(result.clause)")
        // Higher is better for this one (throughput): the canary is not worse.
        let better = try #require(BaselineComparison.compareSeries(check: "rate", canary: canary, baseline: baseline, lowerIsWorse: true, settings: BaselineSettings()))
        #expect(better.passed && better.pValue > 0.99, "\(better.clause)")
        let lower = try #require(BaselineComparison.compareSeries(check: "rate", canary: baseline, baseline: canary, lowerIsWorse: true, settings: BaselineSettings()))
        #expect(!lower.passed && lower.clause.contains("-100% lower") == false && lower.clause.contains("% lower"), "\(lower.clause)")
    }

    @Test func aSeriesLikeTheBaselinesPassesAndTooFewValuesAreNoComparison() throws {
        let canary = [10.0, 11, 9, 10, 12, 10]
        let baseline = [10.0, 10, 11, 9, 11, 10]
        let result = try #require(BaselineComparison.compareSeries(check: "p99", canary: canary, baseline: baseline, lowerIsWorse: false, settings: BaselineSettings()))
        #expect(result.passed, "\(result.clause)")
        #expect(BaselineComparison.compareSeries(check: "p99", canary: [1, 2, 3, 4], baseline: baseline, lowerIsWorse: false, settings: BaselineSettings()) == nil)
    }

    /// Sub-millisecond answers: a significant shift of a few hundredths of a millisecond is 20%
    /// of the median but below the absolute floor (min_slowdown_ms, 0.25): not a slowdown;
    /// without the floor it fails, and a shift above the floor fails with it.
    @Test func aSubMillisecondShiftBelowTheFloorIsNoSlowdown() throws {
        let baseline = (0..<100).map { BaselineComparison.Sample(isSuccess: true, latencyMilliseconds: 0.10 + Double($0 % 10) * 0.001) }
        let canary = (0..<100).map { BaselineComparison.Sample(isSuccess: true, latencyMilliseconds: 0.12 + Double($0 % 10) * 0.001) }
        let floored = try #require(BaselineComparison.compare(check: "http", canary: canary, baseline: baseline, settings: BaselineSettings()))
        #expect(floored[0].passed && floored[0].pValue < 0.0001, "\(floored[0].clause)")
        #expect(floored[0].detail.contains("shift +0.02 ms (+19.1%, limit +0.25 ms)"), "\(floored[0].detail)")
        let unfloored = try #require(BaselineComparison.compare(check: "http", canary: canary, baseline: baseline, settings: BaselineSettings(minSlowdownMilliseconds: 0)))
        #expect(!unfloored[0].passed && unfloored[0].detail.contains("limit +10%"), "\(unfloored[0].detail)")
        let slower = (0..<100).map { BaselineComparison.Sample(isSuccess: true, latencyMilliseconds: 0.50 + Double($0 % 10) * 0.001) }
        let over = try #require(BaselineComparison.compare(check: "http", canary: slower, baseline: baseline, settings: BaselineSettings()))
        #expect(!over[0].passed, "\(over[0].clause)")
    }
}
