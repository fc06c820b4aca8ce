/// `analysis.baseline.*` (defaults in parentheses): how the baseline comparison judges the
/// canary against the baseline.
public struct BaselineSettings: Sendable, Equatable {
    /// analysis.baseline.confidence (0.95): a difference counts only when the one-sided
    /// p-value is below 1 − confidence.
    public var confidence: Double
    /// analysis.baseline.max_slowdown_percent (10): latency fails only when, as well, the
    /// Hodges–Lehmann shift is more than this share of the baseline's median latency (the
    /// effect size).
    public var maxSlowdownPercent: Double
    /// analysis.baseline.min_slowdown_ms (0.25): and more than this, in milliseconds: a shift
    /// smaller than the scheduling noise of one host is no slowdown, however significant (two
    /// identical builds answering in 0.1 ms differ by 10% from their processes' state alone).
    public var minSlowdownMilliseconds: Double
    /// analysis.baseline.max_error_increase_percent (0): errors fail only when, as well, the
    /// canary's failed share exceeds the baseline's by more than this many percentage points.
    public var maxErrorIncreasePercent: Double
    /// analysis.baseline.min_samples (10): with fewer probes than this to either build, no
    /// comparison yet.
    public var minSamples: Int
    /// analysis.baseline.pass_score (95): a score at least this passes (Kayenta's pass threshold).
    public var passScore: Double
    /// analysis.baseline.marginal_score (75): a score below this fails; between it and
    /// `passScore` is inconclusive (Kayenta's marginal threshold).
    public var marginalScore: Double

    public init(confidence: Double = 0.95, maxSlowdownPercent: Double = 10, minSlowdownMilliseconds: Double = 0.25, maxErrorIncreasePercent: Double = 0,
                minSamples: Int = 10, passScore: Double = 95, marginalScore: Double = 75) {
        self.confidence = confidence
        self.maxSlowdownPercent = maxSlowdownPercent
        self.minSlowdownMilliseconds = minSlowdownMilliseconds
        self.maxErrorIncreasePercent = maxErrorIncreasePercent
        self.minSamples = minSamples
        self.passScore = passScore
        self.marginalScore = marginalScore
    }

    /// The significance level, 1 − `confidence`: a p-value below it counts as a difference.
    public var significance: Double { 1 - confidence }
}

/// The judge that compares a new build (the canary) with the previous build (the baseline)
/// serving beside it on the same host, from the http probes attributed to each (pure: the
/// prober records, the driver asks at each interval).
///
/// Each compared http check gives two metrics, as Kayenta's judge does:
/// - latency: the answered probes' latencies (successful or not). It fails when the
///   Mann–Whitney U test finds the canary slower (one-sided p below 1 − confidence) and,
///   as well, the Hodges–Lehmann shift is more than `maxSlowdownPercent` of the baseline's
///   median: `median 13.1 ms against 10 ms, shift +3.1 ms (+31%, limit +10%), Mann-Whitney
///   U 3120, p 0.0001 (below 0.05)`. With fewer than 2 answers on either side it passes:
///   `too few answers to compare latency (canary 1, baseline 40)`.
/// - errors: the probes that failed. It fails when Fisher's exact test finds the canary's
///   failed share greater (p below 1 − confidence) and, as well, more than
///   `maxErrorIncreasePercent` points above the baseline's: `18 of 60 (30%) against 0 of 60
///   (0%) failed, +30 points (limit +0), Fisher p < 0.0001 (below 0.05)`.
///
/// Both tests ask "is the canary worse?": a canary faster or failing less than its
/// baseline always passes. The score is Kayenta's unweighted one, 100 × passed metrics /
/// metrics, and decides the measurement by `passScore` and `marginalScore`.
public struct BaselineComparison: Sendable {
    /// One probe attributed to a build: whether it counts as success, and its latency (nil: no answer).
    public struct Sample: Sendable, Equatable {
        /// Whether the probe counts as success (`success_status`).
        public var isSuccess: Bool
        /// Time to the whole answer, in milliseconds; nil when there was no answer.
        public var latencyMilliseconds: Double?

        public init(isSuccess: Bool, latencyMilliseconds: Double?) {
            self.isSuccess = isSuccess
            self.latencyMilliseconds = latencyMilliseconds
        }
    }

    /// The verdict on one metric of one compared check.
    public struct MetricResult: Sendable, Equatable {
        /// The compared http check's name (`http`).
        public var check: String
        /// `latency` or `errors`.
        public var metric: String
        /// Whether the canary is not worse on this metric.
        public var passed: Bool
        /// One clause of figures: `0 of 61 against 0 of 58 failed, Fisher p 1`.
        public var detail: String
        /// The test's one-sided p-value (1 when there was nothing to compare).
        public var pValue: Double

        public init(check: String, metric: String, passed: Bool, detail: String, pValue: Double) {
            self.check = check
            self.metric = metric
            self.passed = passed
            self.detail = detail
            self.pValue = pValue
        }

        /// The clause naming the check and the metric: `http errors passed: 0 of 61 against 0 of 58 failed, Fisher p 1`.
        public var clause: String { "\(check) \(metric) \(passed ? "passed" : "failed"): \(detail)" }
    }

    /// Compares one http check's probes: its latency and errors results, in that order.
    /// Returns nil while either build has fewer than `minSamples` samples.
    public static func compare(check: String, canary: [Sample], baseline: [Sample], settings: BaselineSettings) -> [MetricResult]? {
        guard canary.count >= settings.minSamples, baseline.count >= settings.minSamples else { return nil }
        return [latency(check: check, canary: canary, baseline: baseline, settings: settings),
                errors(check: check, canary: canary, baseline: baseline, settings: settings)]
    }

    /// The latency metric: Mann–Whitney U for "is it slower", Hodges–Lehmann for "by how much".
    static func latency(check: String, canary: [Sample], baseline: [Sample], settings: BaselineSettings) -> MetricResult {
        let canaryLatencies = canary.compactMap(\.latencyMilliseconds)
        let baselineLatencies = baseline.compactMap(\.latencyMilliseconds)
        guard canaryLatencies.count >= 2, baselineLatencies.count >= 2 else {
            return MetricResult(check: check, metric: "latency", passed: true,
                                detail: "too few answers to compare latency (canary \(canaryLatencies.count), baseline \(baselineLatencies.count))",
                                pValue: 1)
        }
        let test = BaselineStatistics.mannWhitneyGreater(canary: canaryLatencies, baseline: baselineLatencies)
        let shift = BaselineStatistics.hodgesLehmannShift(canary: canaryLatencies, baseline: baselineLatencies)
        let canaryMedian = BaselineStatistics.median(canaryLatencies) ?? 0
        let baselineMedian = BaselineStatistics.median(baselineLatencies) ?? 0
        let significant = test.pValue < settings.significance
        // The limit is the larger of the share of the baseline's median and the absolute floor.
        let byShare = settings.maxSlowdownPercent * baselineMedian / 100
        let large = shift > max(byShare, settings.minSlowdownMilliseconds)
        let limit = byShare >= settings.minSlowdownMilliseconds
            ? "limit +\(AnalysisFormat.percent(settings.maxSlowdownPercent))%"
            : "limit +\(AnalysisFormat.number(settings.minSlowdownMilliseconds)) ms"
        let shiftPercent = baselineMedian > 0 ? shift * 100 / baselineMedian : (shift == 0 ? 0 : shift > 0 ? .infinity : -.infinity)
        let detail = "median \(milliseconds(canaryMedian)) ms against \(milliseconds(baselineMedian)) ms, "
            + "shift \(signed(milliseconds(shift), shift)) ms (\(signed(AnalysisFormat.percent(shiftPercent), shiftPercent))%, \(limit)), "
            + "Mann-Whitney U \(AnalysisFormat.number(test.u)), \(probability(test.pValue, settings: settings))"
        return MetricResult(check: check, metric: "latency", passed: !(significant && large), detail: detail, pValue: test.pValue)
    }

    /// The errors metric: Fisher's exact test for "does it fail more often", the difference of
    /// the failed shares for "by how much".
    static func errors(check: String, canary: [Sample], baseline: [Sample], settings: BaselineSettings) -> MetricResult {
        let canaryFailed = canary.count(where: { !$0.isSuccess })
        let baselineFailed = baseline.count(where: { !$0.isSuccess })
        let p = BaselineStatistics.fisherGreater(canaryFailures: canaryFailed, canaryTotal: canary.count,
                                                 baselineFailures: baselineFailed, baselineTotal: baseline.count)
        let canaryShare = canary.isEmpty ? 0 : Double(canaryFailed) * 100 / Double(canary.count)
        let baselineShare = baseline.isEmpty ? 0 : Double(baselineFailed) * 100 / Double(baseline.count)
        let increase = canaryShare - baselineShare
        let passed = !(p < settings.significance && increase > settings.maxErrorIncreasePercent)
        let fisher = "Fisher \(probability(p, settings: settings))"
        guard canaryFailed + baselineFailed > 0 else {
            return MetricResult(check: check, metric: "errors", passed: passed,
                                detail: "0 of \(canary.count) against 0 of \(baseline.count) failed, \(fisher)", pValue: p)
        }
        let detail = "\(canaryFailed) of \(canary.count) (\(AnalysisFormat.percent(canaryShare))%) against "
            + "\(baselineFailed) of \(baseline.count) (\(AnalysisFormat.percent(baselineShare))%) failed, "
            + "\(signed(AnalysisFormat.percent(increase), increase)) points "
            + "(limit +\(AnalysisFormat.percent(settings.maxErrorIncreasePercent))), \(fisher)"
        return MetricResult(check: check, metric: "errors", passed: passed, detail: detail, pValue: p)
    }

    /// The fewest values of each build's series a compared Prometheus check needs (5 against 5
    /// can already be told apart: complete separation has p ≈ 0.006).
    public static let minimumSeriesPoints = 5

    /// Compares one Prometheus check's series, one value per measurement of each build (the
    /// app's own metrics, queried once per build): Mann–Whitney U for "is it worse" (higher,
    /// or lower with `lowerIsWorse`), the Hodges–Lehmann shift against the baseline's median
    /// for "by how much" (`max_slowdown_percent`, the same effect-size floor as latency), as
    /// Kayenta judges a metric's time series. Nil while either series has fewer than
    /// `minimumSeriesPoints` values.
    public static func compareSeries(check: String, canary: [Double], baseline: [Double], lowerIsWorse: Bool,
                                     settings: BaselineSettings) -> MetricResult? {
        guard canary.count >= minimumSeriesPoints, baseline.count >= minimumSeriesPoints else { return nil }
        let sign = lowerIsWorse ? -1.0 : 1.0
        let test = BaselineStatistics.mannWhitneyGreater(canary: canary.map { $0 * sign }, baseline: baseline.map { $0 * sign })
        let shift = BaselineStatistics.hodgesLehmannShift(canary: canary.map { $0 * sign }, baseline: baseline.map { $0 * sign })
        let canaryMedian = BaselineStatistics.median(canary) ?? 0
        let baselineMedian = BaselineStatistics.median(baseline) ?? 0
        let scale = abs(baselineMedian)
        let large = shift * 100 > settings.maxSlowdownPercent * scale
        let shiftPercent = scale > 0 ? shift * 100 / scale : (shift == 0 ? 0 : shift > 0 ? .infinity : -.infinity)
        let worse = lowerIsWorse ? "lower" : "higher"
        let effect = scale > 0 ? "\(signed(AnalysisFormat.percent(shiftPercent), shiftPercent))% \(worse)"
            : "\(signed(AnalysisFormat.number(shift * sign), shift * sign)) where the baseline's median is 0"
        let detail = "median \(AnalysisFormat.number(canaryMedian)) against \(AnalysisFormat.number(baselineMedian)) over \(canary.count) and "
            + "\(baseline.count) measurements, \(effect) "
            + "(limit +\(AnalysisFormat.percent(settings.maxSlowdownPercent))%), "
            + "Mann-Whitney U \(AnalysisFormat.number(test.u)), \(probability(test.pValue, settings: settings))"
        return MetricResult(check: check, metric: "value", passed: !(test.pValue < settings.significance && large), detail: detail,
                            pValue: test.pValue)
    }

    /// The score (100 × passed metrics / metrics, Kayenta's unweighted score) and the
    /// measurement of the check named `name` (the spec's comparison check, e.g. `baseline`)
    /// from the results of every compared http check, `counts` being the probes of each build:
    /// - successful when the score is at least `passScore`, failed when it is below
    ///   `marginalScore`, inconclusive between (Argo Rollouts maps Kayenta's marginal to
    ///   Inconclusive the same way): `score 50 (pass 95, marginal 75) over 61 canary and 58
    ///   baseline probes: http latency failed: ...; http errors passed: ...`;
    /// - without results, no score and inconclusive: `fewer than 10 probes of each build so
    ///   far (canary 4, baseline 12; min_samples 10)`.
    public static func measurement(name: String, results: [MetricResult], settings: BaselineSettings,
                                   counts: (canary: Int, baseline: Int)) -> (score: Double?, measurement: Measurement) {
        guard !results.isEmpty else {
            let detail = "fewer than \(settings.minSamples) probes of each build so far "
                + "(canary \(counts.canary), baseline \(counts.baseline); min_samples \(settings.minSamples))"
            return (nil, Measurement(check: name, phase: .inconclusive, detail: detail))
        }
        let score = Double(results.count(where: \.passed)) * 100 / Double(results.count)
        let phase: MeasurementPhase = score >= settings.passScore ? .successful : score < settings.marginalScore ? .failed : .inconclusive
        let detail = "score \(AnalysisFormat.percent(score)) (pass \(AnalysisFormat.number(settings.passScore)), "
            + "marginal \(AnalysisFormat.number(settings.marginalScore))) over \(counts.canary) canary and "
            + "\(counts.baseline) baseline probes: " + results.map(\.clause).joined(separator: "; ")
        return (score, Measurement(check: name, phase: phase, detail: detail))
    }

    // MARK: Formatting

    /// Milliseconds to a tenth, and below 1 ms to a thousandth: `13.1`, `10`, `0.125`.
    static func milliseconds(_ value: Double) -> String {
        guard value.isFinite else { return AnalysisFormat.number(value) }
        // Below a millisecond, to the microsecond: a sub-millisecond service's shift shows.
        let scale = abs(value) < 1 ? 1000.0 : 10.0
        return AnalysisFormat.number((value * scale).rounded() / scale)
    }

    /// `text` with a `+` in front when `value` is not negative (a negative one has its `-`).
    static func signed(_ text: String, _ value: Double) -> String {
        value >= 0 && !text.hasPrefix("+") ? "+" + text : text
    }

    /// `p 0.034`, with `(below 0.05)` when it counts as a difference.
    static func probability(_ p: Double, settings: BaselineSettings) -> String {
        let text = "p \(pValue(p))"
        return p < settings.significance ? text + " (below \(AnalysisFormat.number(settings.significance)))" : text
    }

    /// A p-value to 2 significant digits: `0.0001`, `0.034`, `1`; below 0.0001, `< 0.0001`.
    static func pValue(_ p: Double) -> String {
        guard p.isFinite else { return AnalysisFormat.number(p) }
        if p < 0.0001 { return "< 0.0001" }
        var decimals = 1
        while decimals < 20, p * pow10(decimals) < 10 { decimals += 1 }
        let scale = pow10(decimals)
        let rounded = (p * scale).rounded() / scale
        if rounded == rounded.rounded() { return String(Int64(rounded)) }
        return "\(rounded)"
    }

    /// 10 to the power `exponent` (0 or more), exactly for the exponents `pValue` uses.
    private static func pow10(_ exponent: Int) -> Double {
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }
}
