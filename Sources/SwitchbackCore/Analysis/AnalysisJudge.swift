/// The verdict of an analysis from its measurements, with Argo Rollouts' semantics
/// (a pure accumulator: no clock, no I/O; the driver feeds it and asks at the deadline):
/// - a check fails as soon as it has more failed measurements than `failureLimit`;
/// - with `consecutiveErrorLimit` set, a check with more errors in a row than it fails;
///   without it, errors never fail it;
/// - a check with more inconclusive measurements than `inconclusiveLimit` ends the analysis
///   inconclusive;
/// - the app's explicit "bad" fails the app's check at once;
/// - a failed check decides by its `onFailure`: `rollback` fails the analysis, `hold` ends it
///   held, `record` decides nothing (its failures are named in the final sentence, and it
///   never makes the analysis inconclusive);
/// - at the deadline (`finish`): passed when every check that acts had at least one
///   successful measurement, inconclusive otherwise (e.g. Prometheus unreachable the whole window);
/// - in a dry run every verdict that acts is the one it would have been (`AnalysisVerdict.dryRun`).
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
        /// The latest failure of a check that only records (`on_failure=record`).
        public var lastRecordedFailure: Measurement?
    }

    public let spec: AnalysisSpec
    /// Each check's tally, by name (every check of the spec has one from the start).
    public private(set) var tallies: [String: Tally]
    /// What each check's failure does, by name.
    private let actions: [String: AnalysisCheck.FailureAction]
    /// The verdict, once one is reached before the deadline.
    public private(set) var verdict: AnalysisVerdict?

    public init(spec: AnalysisSpec) {
        self.spec = spec
        var tallies: [String: Tally] = [:]
        for check in spec.checks { tallies[check.name] = Tally() }
        self.tallies = tallies
        actions = Dictionary(spec.checks.map { ($0.name, $0.onFailure) }, uniquingKeysWith: { first, _ in first })
    }

    /// The check failed with `sentence`: what its `on_failure` makes of it.
    private mutating func checkFailed(_ measurement: Measurement, sentence: String, tally: inout Tally) {
        switch actions[measurement.check] ?? .rollback {
        case .rollback: decide(.failed(sentence))
        case .hold: decide(.held(sentence + " (on_failure=hold)"))
        case .record: tally.lastRecordedFailure = measurement
        }
    }

    /// Sets the verdict, as a dry run records it when it is one.
    private mutating func decide(_ verdict: AnalysisVerdict) {
        self.verdict = spec.dryRun ? verdict.dryRun : verdict
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
                checkFailed(measurement, sentence: measurement.sentence + count, tally: &tally)
            }
        case .inconclusive:
            tally.inconclusive += 1
            tally.consecutiveErrors = 0
            if tally.inconclusive > spec.inconclusiveLimit, actions[measurement.check] != .record {
                decide(.inconclusive(measurement.sentence + " (\(tally.inconclusive) inconclusive measurement\(tally.inconclusive == 1 ? "" : "s"), inconclusive_limit \(spec.inconclusiveLimit))"))
            }
        case .error:
            tally.errors += 1
            tally.consecutiveErrors += 1
            if let limit = spec.consecutiveErrorLimit, tally.consecutiveErrors > limit {
                checkFailed(measurement, sentence: measurement.sentence + " (\(tally.consecutiveErrors) errors in a row, consecutive_error_limit \(limit))", tally: &tally)
            }
        }
        tallies[measurement.check] = tally
        return verdict
    }

    /// The app reported itself bad (`Switchback.reportBad`): the app's check fails at once,
    /// `app: reported bad: "database schema mismatch"`, and its `on_failure` decides (a
    /// check not in the spec rolls back). `check` names the app's check.
    @discardableResult
    public mutating func recordAppBad(_ reason: String, check: String = "app") -> AnalysisVerdict? {
        if let verdict { return verdict }
        let measurement = Measurement(check: check, phase: .failed, detail: "reported bad: \"\(reason)\"")
        var tally = tallies[check] ?? Tally()
        tally.failed += 1
        tally.last = measurement
        checkFailed(measurement, sentence: measurement.sentence, tally: &tally)
        tallies[check] = tally
        return verdict
    }

    /// The verdict at the window's end: the one reached before, if any; passed when every
    /// check that acts had a successful measurement, naming the failures of the checks that
    /// only record; inconclusive naming the first check that had none, with its last measurement.
    public func finish() -> AnalysisVerdict {
        if let verdict { return verdict }
        let verdict = unactedVerdict()
        return spec.dryRun ? verdict.dryRun : verdict
    }

    private func unactedVerdict() -> AnalysisVerdict {
        let window = "\(spec.windowSeconds) s"
        for check in spec.checks where check.onFailure != .record {
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
        if spec.checks.isEmpty { return .passed("no check failed in the \(window) window (no checks configured)") }
        let summary = spec.checks.map { check in
            let tally = tallies[check.name] ?? Tally()
            let total = tally.successful + tally.failed + tally.inconclusive + tally.errors
            return "\(check.name) \(tally.successful) of \(total)"
        }
        let recorded = spec.checks.compactMap { check -> String? in
            guard let tally = tallies[check.name], let failure = tally.lastRecordedFailure else { return nil }
            return "\(failure.sentence) (on_failure=record)"
        }
        guard recorded.isEmpty else {
            return .passed("no check that acts failed in the \(window) window (successful measurements: \(summary.joined(separator: ", "))); recorded only: \(recorded.joined(separator: "; "))")
        }
        return .passed("every check passed in the \(window) window (successful measurements: \(summary.joined(separator: ", ")))")
    }
}
