#if canImport(Glibc)
import Glibc
#endif
import SwitchbackCore
import SwitchbackRemote

/// Runs an analysis: every check of a spec at its interval until a deadline, each measurement
/// fed to an `AnalysisJudge`, the measurements and the verdict told through a callback.
///
/// - Each check runs on a thread of its own that sleeps between its probes and measurements
///   (a condition wait, no polling); http probes start at once, the first measurement of
///   every check comes one interval after the start.
/// - An http check's probes leave at a fixed rate, one every `probe_interval_ms`, each on a
///   thread of its own, whether or not the ones before have answered (at most as many at
///   once as its timeout allows): a slower build gets as many probes as a fast one, and a
///   probe still unanswered counts as slow (`HTTPProbeWindow`).
/// - The run ends at the first verdict (a failed check, too many inconclusive measurements,
///   the app's "bad"), or at the deadline: then every check is measured one last time (unless
///   it was measured less than half an interval before; a Prometheus query then takes up to
///   its timeout more), so the end of a window, or of a rollout's pause, is always judged
///   (an 18 s pause at 6 s intervals: 3 measurements, not 2), and the judge finishes
///   (successful only if every check succeeded at least once).
/// - The app's signals come from any thread: `reportAppFailures(_:)`, `reportAppBad(_:)`.
///
/// `run` blocks its caller; threads still blocked in a probe or a query when it returns end
/// after their own timeout, without emitting anything more.
public final class AnalysisRun: @unchecked Sendable {
    /// What the run tells its caller, in order.
    public enum Event: Sendable, Equatable {
        case measurement(Measurement)
        case verdict(AnalysisVerdict)
    }

    /// What the new build is compared with (`analysis.baseline=true`).
    public enum Comparison: Sendable, Equatable {
        /// The previous build serves beside it: every http probe is attributed to the child
        /// that accepted it (`AttributedProbe`), the baseline's kept apart from the absolute checks.
        case beside(baselinePID: pid_t, canaryPID: pid_t)
        /// No baseline runs: the comparison check is dropped and the verdict says why.
        case none(String)
    }

    /// The analysis (without its comparison check when no baseline runs).
    public let spec: AnalysisSpec
    /// The query variables (`version`, `build`, `slot`, `app_id`, `hostname`, `previous_version`).
    public let variables: [String: String]
    /// The two children's pids while a baseline serves beside the build on probation.
    public let pids: (baseline: pid_t, canary: pid_t)?
    /// The query variables of the baseline's build (a compared Prometheus check's second query).
    public let baselineVariables: [String: String]
    /// Why the comparison the spec asks for was dropped, for the verdict's sentence.
    public let noBaseline: String?

    // Everything below is guarded by `monitor`.
    private let monitor = Monitor()
    private var judge: AnalysisJudge
    private var windows: [String: HTTPProbeWindow] = [:]
    private var lastMeasuredAt: [String: Int64] = [:]
    private var appFailures = 0
    /// Each compared Prometheus check's values, one per measurement of each build.
    private var series: [String: (canary: [Double], baseline: [Double])] = [:]
    /// Each http check's probes attributed to each build since the start (a baseline beside).
    private var samples: [String: (canary: [BaselineComparison.Sample], baseline: [BaselineComparison.Sample])] = [:]
    /// The most samples kept of each build per check: the latest.
    static let maximumSamples = 5_000
    private var isOver = false
    /// The deadline passed: the last measurements are the run's own; the loops record nothing more.
    private var isEnding = false
    private var emit: (@Sendable (Event) -> Void)?

    /// The longest a last query at the deadline may take: well inside the 15 s the supervisor
    /// waits past a bake window for the verdict (`SupervisorMachine.verdictGraceSeconds`).
    static let endQueryLimitMilliseconds = 10_000

    /// `baselineVariables`: `version`, `build` and `slot` of the baseline, over `variables`.
    public init(spec: AnalysisSpec, variables: [String: String] = [:], comparison: Comparison? = nil,
                baselineVariables: [String: String] = [:]) {
        self.baselineVariables = variables.merging(baselineVariables) { $1 }
        var spec = spec
        let compares = spec.checks.contains { if case .baseline = $0.kind { true } else { false } }
        switch comparison {
        case .beside(let baselinePID, let canaryPID)? where compares:
            pids = (baselinePID, canaryPID)
            noBaseline = nil
        case .none(let why)? where compares:
            pids = nil
            noBaseline = why
        default:
            pids = nil
            noBaseline = compares ? "the supervisor named no build serving beside it" : nil
        }
        if pids == nil { spec.checks.removeAll { if case .baseline = $0.kind { true } else { false } } }
        self.spec = spec
        self.variables = variables
        judge = AnalysisJudge(spec: spec)
        for check in spec.checks {
            if case .http(let settings) = check.kind { windows[check.name] = HTTPProbeWindow(settings: settings) }
        }
    }

    /// Runs until a verdict or `endsAt` (Unix time in milliseconds) and returns the verdict,
    /// after telling `onEvent` each measurement and then the verdict. Call it once.
    /// `onEvent` is called with the run's lock held, one event at a time: it must not call
    /// back into the run.
    public func run(endingAt endsAt: Int64, onEvent: @escaping @Sendable (Event) -> Void) -> AnalysisVerdict {
        let start = MonotonicClock.milliseconds()
        let deadline = start + max(0, endsAt - MonotonicClock.unixMilliseconds())
        monitor.withLock { emit = onEvent }
        for check in spec.checks {
            FetchThread.start { [self] in loop(check, start: start) }
        }
        let due: [(AnalysisCheck, AnalysisCheck.Prometheus)] = monitor.withLock {
            while !isOver, judge.verdict == nil, MonotonicClock.milliseconds() < deadline {
                monitor.wait(until: deadline * 1_000_000)
            }
            guard !isOver, judge.verdict == nil else { return [] }
            isEnding = true
            let now = MonotonicClock.milliseconds()
            return spec.checks.compactMap { check in
                guard case .prometheus(let settings) = check.kind, !measuredRecently(check, now: now) else { return nil }
                return (check, settings)
            }
        }
        // The queries of the end, outside the lock, each bounded by its timeout and by
        // `endQueryLimitMilliseconds` (the supervisor waits 15 s past a window for the verdict).
        let last = due.map { check, settings in
            PrometheusClient(address: settings.address, timeoutMilliseconds: min(settings.timeoutMilliseconds, Self.endQueryLimitMilliseconds))
                .measure(settings, name: check.name, variables: variables, at: MonotonicClock.unixMilliseconds())
        }
        let verdict: AnalysisVerdict = monitor.withLock {
            let stopped = isOver
            if !stopped, judge.verdict == nil {
                let now = MonotonicClock.milliseconds()
                for measurement in last where judge.verdict == nil { record(measurement, at: now, ending: true) }
                if judge.verdict == nil { measureAtTheEnd(now: now) }
            }
            var verdict = judge.verdict ?? (stopped ? .inconclusive("the analysis was stopped before its window ended") : judge.finish())
            if let noBaseline {
                verdict = AnalysisVerdict(word: verdict.word, sentence: verdict.sentence + " (no baseline: \(noBaseline); judged by the absolute checks only)") ?? verdict
            }
            if !stopped { emit?(.verdict(verdict)) }
            isOver = true
            emit = nil
            monitor.broadcast()
            return verdict
        }
        return verdict
    }

    /// Ends a run early, without a verdict event: `run` returns the verdict reached so far,
    /// or inconclusive ("the analysis was stopped before its window ended").
    public func stop() {
        monitor.withLock {
            guard !isOver else { return }
            isOver = true
            emit = nil
            monitor.broadcast()
        }
    }

    /// The app's cumulative failure count (the SDK's `reportFailures`), measured by `app`
    /// checks at their intervals.
    public func reportAppFailures(_ count: Int) {
        monitor.withLock { appFailures = max(0, count) }
    }

    /// The app reported itself bad: the analysis fails at once.
    public func reportAppBad(_ reason: String) {
        monitor.withLock {
            guard !isOver else { return }
            let name = spec.checks.first { if case .app = $0.kind { true } else { false } }?.name ?? "app"
            judge.recordAppBad(reason, check: name)
            monitor.broadcast()
        }
    }

    /// The tallies so far (for a status).
    public var tallies: [String: AnalysisJudge.Tally] { monitor.withLock { judge.tallies } }

    // MARK: - The checks' loops

    /// Records a measurement (the lock held) and wakes `run` when it decides the analysis.
    /// Past the deadline only the run's own last measurements (`ending`) count.
    private func record(_ measurement: Measurement, at now: Int64, ending: Bool = false) {
        guard !isOver, judge.verdict == nil, ending || !isEnding else { return }
        lastMeasuredAt[measurement.check] = now
        emit?(.measurement(measurement))
        if judge.record(measurement) != nil { monitor.broadcast() }
    }

    /// Whether `check` was measured less than half an interval before `now` (the lock held).
    private func measuredRecently(_ check: AnalysisCheck, now: Int64) -> Bool {
        lastMeasuredAt[check.name].map { now - $0 < Int64(check.intervalMilliseconds / 2) } ?? false
    }

    /// The last measurements of the http and app checks at the deadline (the lock held; the
    /// Prometheus checks' were queried just before, outside it).
    private func measureAtTheEnd(now: Int64) {
        for check in spec.checks where judge.verdict == nil && !measuredRecently(check, now: now) {
            switch check.kind {
            case .http:
                if var window = windows[check.name] {
                    let measurement = window.measure(at: now, check: check.name)
                    windows[check.name] = window
                    record(measurement, at: now, ending: true)
                }
            case .app, .baseline:
                if let measurement = heldMeasurement(check, ending: true) { record(measurement, at: now, ending: true) }
            case .prometheus:
                break
            }
        }
    }

    /// The measurement of a check measured from what the run holds (the lock held): the app's
    /// failure count, or the comparison; nil for the checks that probe or query.
    private func heldMeasurement(_ check: AnalysisCheck, ending: Bool) -> Measurement? {
        switch check.kind {
        case .app(let settings): return settings.measurement(failures: appFailures, check: check.name)
        case .baseline(let settings): return comparisonMeasurement(check.name, settings: settings, ending: ending)
        case .http, .prometheus: return nil
        }
    }

    /// The comparison's measurement from the samples so far (the lock held): nil while either
    /// build has too few of them, unless `ending` (then an inconclusive one that says so).
    private func comparisonMeasurement(_ name: String, settings: BaselineSettings, ending: Bool) -> Measurement? {
        var results: [BaselineComparison.MetricResult] = []
        var counts = (canary: 0, baseline: 0)
        for check in spec.checks {
            guard case .http = check.kind else { continue }
            let both = samples[check.name] ?? ([], [])
            counts.canary += both.canary.count
            counts.baseline += both.baseline.count
            results += BaselineComparison.compare(check: check.name, canary: both.canary, baseline: both.baseline, settings: settings) ?? []
        }
        for check in spec.checks {
            guard case .prometheus(let prometheus) = check.kind, let compare = prometheus.compare, let values = series[check.name],
                  let result = BaselineComparison.compareSeries(check: check.name, canary: values.canary, baseline: values.baseline,
                                                                lowerIsWorse: compare == .lowerIsWorse, settings: settings) else { continue }
            results.append(result)
        }
        guard !results.isEmpty || ending else { return nil }
        return BaselineComparison.measurement(name: name, results: results, settings: settings, counts: counts).measurement
    }

    /// Records one probe's outcome (the lock held): the baseline's go to the comparison only;
    /// the canary's, and those no build took, to the check's window as well.
    /// Records one tick's probes (the lock held). Without a baseline, its one probe goes to
    /// the check's window. With one, every probe is a sample of the build that accepted it,
    /// and the window (the absolute limits, which judge the build on probation) takes the
    /// tick's first probe of the canary, or the one no build accepted; a tick that reached
    /// only the baseline leaves the window nothing.
    private func recordTick(_ outcomes: [(probe: HTTPProbeWindow.Probe, holder: Int?)], at: Int64, check: String) {
        guard pids != nil else {
            for outcome in outcomes { windows[check]?.record(outcome.probe) }
            return
        }
        var both = samples[check] ?? ([], [])
        var windowProbe: HTTPProbeWindow.Probe?
        for (probe, holder) in outcomes {
            let sample = BaselineComparison.Sample(isSuccess: probe.isSuccess, latencyMilliseconds: probe.latencyMilliseconds)
            switch holder {
            case 0?: both.baseline.append(sample)
            case _?: both.canary.append(sample)
            case nil: break
            }
            if holder != 0, windowProbe == nil { windowProbe = probe }
        }
        if both.baseline.count > Self.maximumSamples { both.baseline.removeFirst(both.baseline.count - Self.maximumSamples) }
        if both.canary.count > Self.maximumSamples { both.canary.removeFirst(both.canary.count - Self.maximumSamples) }
        samples[check] = both
        if let windowProbe { windows[check]?.record(windowProbe) } else { windows[check]?.withdraw(at: at) }
    }

    private func loop(_ check: AnalysisCheck, start: Int64) {
        let interval = Int64(check.intervalMilliseconds)
        var nextMeasurement = start + interval
        switch check.kind {
        case .http(let settings):
            let prober = HTTPProber(settings: settings, pids: pids.map { [$0.baseline, $0.canary] })
            let probeInterval = Int64(settings.probeIntervalMilliseconds)
            // Every probe ends by its timeout, so this many are never all still out at once
            // unless the machine cannot run their threads; a tick past it is a failed probe.
            let maxInFlight = min(64, settings.timeoutMilliseconds / settings.probeIntervalMilliseconds + 2)
            var nextProbe = start
            while true {
                let now = MonotonicClock.milliseconds()
                if now >= nextProbe {
                    // Stamped with its tick: a loop woken late sends it at once, and skips the
                    // ticks it slept through rather than sending them in a burst.
                    let at = nextProbe
                    nextProbe += max(1, (now - nextProbe) / probeInterval + 1) * probeInterval
                    let over: Bool = monitor.withLock {
                        guard !isOver, var window = windows[check.name] else { return true }
                        if window.pending.count >= maxInFlight {
                            window.record(.init(at: at, isSuccess: false, latencyMilliseconds: nil,
                                                reason: "not sent: \(window.pending.count) probes still unanswered"))
                        } else {
                            window.sent(at: at)
                            FetchThread.start { [self] in
                                let outcomes = prober.attributedProbes(at: at)
                                monitor.withLock {
                                    guard !isOver else { return }
                                    recordTick(outcomes, at: at, check: check.name)
                                }
                            }
                        }
                        windows[check.name] = window
                        return false
                    }
                    if over { return }
                }
                let over: Bool = monitor.withLock {
                    if !isOver, now >= nextMeasurement, var window = windows[check.name] {
                        let measurement = window.measure(at: now, check: check.name)
                        windows[check.name] = window
                        record(measurement, at: now)
                        nextMeasurement += interval
                    }
                    if !isOver, judge.verdict == nil { monitor.wait(until: min(nextProbe, nextMeasurement) * 1_000_000) }
                    return isOver || judge.verdict != nil
                }
                if over { return }
            }
        case .prometheus(let settings):
            let client = PrometheusClient(address: settings.address, timeoutMilliseconds: settings.timeoutMilliseconds)
            while true {
                let over: Bool = monitor.withLock {
                    while !isOver, judge.verdict == nil, MonotonicClock.milliseconds() < nextMeasurement {
                        monitor.wait(until: nextMeasurement * 1_000_000)
                    }
                    return isOver || judge.verdict != nil
                }
                if over { return }
                let at = MonotonicClock.unixMilliseconds()
                guard pids != nil, settings.compare != nil else {
                    let measurement = client.measure(settings, name: check.name, variables: variables, at: at)
                    let now = MonotonicClock.milliseconds()
                    nextMeasurement = max(nextMeasurement + interval, now)
                    monitor.withLock { record(measurement, at: now) }
                    continue
                }
                // Compared: the query for each build at the same instant; the canary's value is
                // judged by the conditions as well, and both go to the comparison's series.
                let canary = client.query(settings.query(substituting: variables), at: at)
                let baseline = client.query(settings.query(substituting: baselineVariables), at: at)
                let measurement: Measurement
                switch canary {
                case .samples(let values): measurement = settings.measurement(of: values, check: check.name)
                case .error(let detail): measurement = Measurement(check: check.name, phase: .error, detail: detail)
                }
                let now = MonotonicClock.milliseconds()
                nextMeasurement = max(nextMeasurement + interval, now)
                monitor.withLock {
                    if case .samples(let canaryValues) = canary, let canaryValue = canaryValues.first, canaryValue.isFinite,
                       case .samples(let baselineValues) = baseline, let baselineValue = baselineValues.first, baselineValue.isFinite {
                        var values = series[check.name] ?? ([], [])
                        values.canary.append(canaryValue)
                        values.baseline.append(baselineValue)
                        series[check.name] = values
                    }
                    record(measurement, at: now)
                }
            }
        case .app, .baseline:
            // Measured from what the run holds (the app's count, the comparison's samples).
            while true {
                let over: Bool = monitor.withLock {
                    while !isOver, judge.verdict == nil, MonotonicClock.milliseconds() < nextMeasurement {
                        monitor.wait(until: nextMeasurement * 1_000_000)
                    }
                    if !isOver, judge.verdict == nil {
                        let now = MonotonicClock.milliseconds()
                        if let measurement = heldMeasurement(check, ending: false) { record(measurement, at: now) }
                        nextMeasurement += interval
                    }
                    return isOver || judge.verdict != nil
                }
                if over { return }
            }
        }
    }
}
