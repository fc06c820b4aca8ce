/// The verdict of an analysis from its measurements, with Argo Rollouts' semantics
/// (a pure accumulator: no clock, no I/O; the driver feeds it and asks at the deadline):
/// - a check fails the analysis as soon as it has more failed measurements than
///   `failureLimit`;
/// - with `consecutiveErrorLimit` set, a check with more errors in a row than it fails the
///   analysis; without it, errors never fail it;
/// - a check with more inconclusive measurements than `inconclusiveLimit` ends the analysis
///   inconclusive;
/// - the app's explicit "bad" fails it at once;
/// - at the deadline (`finish`): successful when every check had at least one successful
///   measurement, inconclusive otherwise (e.g. Prometheus unreachable the whole window).
///
/// The first verdict sticks: measurements recorded after it change nothing.
public struct AnalysisJudge: Sendable {
    /// The tally of one check.
    public struct Tally: Sendable, Equatable {
        public var successful = 0
        public var failed = 0
        public var inconclusive = 0
        public var errors = 0
        public var consecutiveErrors = 0
        /// The latest measurement.
        public var last: Measurement?
    }

    public let spec: AnalysisSpec
    /// Each check's tally, by name (every check of the spec has one from the start).
    public private(set) var tallies: [String: Tally]
    /// The verdict, once one is reached before the deadline.
    public private(set) var verdict: AnalysisVerdict?

    public init(spec: AnalysisSpec) {
        self.spec = spec
        var tallies: [String: Tally] = [:]
        for check in spec.checks { tallies[check.name] = Tally() }
        self.tallies = tallies
    }

    /// Counts `measurement`; returns the verdict when it decides the analysis (and every
    /// time after that), nil while the analysis goes on.
    @discardableResult
    public mutating func record(_ measurement: Measurement) -> AnalysisVerdict? {
        if let verdict { return verdict }
        var tally = tallies[measurement.check] ?? Tally()
        tally.last = measurement
        switch measurement.phase {
        case .successful:
            tally.successful += 1
            tally.consecutiveErrors = 0
        case .failed:
            tally.failed += 1
            tally.consecutiveErrors = 0
            if tally.failed > spec.failureLimit {
                let count = spec.failureLimit == 0 ? "" : " (\(tally.failed) failed measurements, failure_limit \(spec.failureLimit))"
                verdict = .failed(measurement.sentence + count)
            }
        case .inconclusive:
            tally.inconclusive += 1
            tally.consecutiveErrors = 0
            if tally.inconclusive > spec.inconclusiveLimit {
                verdict = .inconclusive(measurement.sentence + " (\(tally.inconclusive) inconclusive measurement\(tally.inconclusive == 1 ? "" : "s"), inconclusive_limit \(spec.inconclusiveLimit))")
            }
        case .error:
            tally.errors += 1
            tally.consecutiveErrors += 1
            if let limit = spec.consecutiveErrorLimit, tally.consecutiveErrors > limit {
                verdict = .failed(measurement.sentence + " (\(tally.consecutiveErrors) errors in a row, consecutive_error_limit \(limit))")
            }
        }
        tallies[measurement.check] = tally
        return verdict
    }

    /// The app reported itself bad (`Switchback.reportBad`): the analysis fails at once,
    /// `app: reported bad: "database schema mismatch"`. `check` names the app's check.
    @discardableResult
    public mutating func recordAppBad(_ reason: String, check: String = "app") -> AnalysisVerdict {
        if let verdict { return verdict }
        let measurement = Measurement(check: check, phase: .failed, detail: "reported bad: \"\(reason)\"")
        var tally = tallies[check] ?? Tally()
        tally.failed += 1
        tally.last = measurement
        tallies[check] = tally
        let verdict = AnalysisVerdict.failed(measurement.sentence)
        self.verdict = verdict
        return verdict
    }

    /// The verdict at the window's end: the one reached before, if any; successful when
    /// every check had a successful measurement; inconclusive naming the first check that
    /// had none, with its last measurement.
    public func finish() -> AnalysisVerdict {
        if let verdict { return verdict }
        let window = "\(spec.windowSeconds) s"
        for check in spec.checks {
            let tally = tallies[check.name] ?? Tally()
            guard tally.successful == 0 else { continue }
            guard let last = tally.last else {
                return .inconclusive("\(check.name): no measurement in the \(window) window")
            }
            var counts: [String] = []
            if tally.errors > 0 { counts.append("\(tally.errors) error\(tally.errors == 1 ? "" : "s")") }
            if tally.inconclusive > 0 { counts.append("\(tally.inconclusive) inconclusive") }
            if tally.failed > 0 { counts.append("\(tally.failed) failed") }
            return .inconclusive("\(check.name): no successful measurement in the \(window) window (\(counts.joined(separator: ", "))); last: \(last.detail)")
        }
        if spec.checks.isEmpty { return .successful("no check failed in the \(window) window (no checks configured)") }
        let summary = spec.checks.map { check in
            let tally = tallies[check.name] ?? Tally()
            let total = tally.successful + tally.failed + tally.inconclusive + tally.errors
            return "\(check.name) \(tally.successful) of \(total)"
        }
        return .successful("every check passed in the \(window) window (successful measurements: \(summary.joined(separator: ", ")))")
    }
}
