/// One check of an analysis (`analysis.check.NAME.*`): its name, how often it is measured,
/// and what it measures.
public struct AnalysisCheck: Sendable, Equatable {
    /// The name, as `analysis.checks` lists it: letters, digits, `_` and `-`.
    public var name: String
    /// Time between two measurements (`analysis.check.NAME.interval_s`, default
    /// `analysis.interval_s`), in milliseconds.
    public var intervalMilliseconds: Int
    /// What the check measures.
    public var kind: Kind
    /// What the check's failure does (`analysis.check.NAME.on_failure`, default `rollback`).
    public var onFailure: FailureAction

    public init(name: String, intervalMilliseconds: Int, kind: Kind, onFailure: FailureAction = .rollback) {
        self.name = name
        self.intervalMilliseconds = intervalMilliseconds
        self.kind = kind
        self.onFailure = onFailure
    }

    /// What a check's failure does to the analysis (Argo's `dryRun` per metric is `record`;
    /// its advice to pause with an inconclusive result is `hold`).
    public enum FailureAction: String, Sendable, Equatable, CaseIterable {
        /// The analysis fails: the build is rolled back (a rollout rolls back).
        case rollback
        /// The analysis ends held: the build keeps serving and waits for `rollbackctl
        /// promote` or `abort` (a rollout waits for `--approve` or `--abort`).
        case hold
        /// The failure is recorded (its measurements, the verdict's sentence) and decides nothing.
        case record
    }

    /// What a check measures.
    public enum Kind: Sendable, Equatable {
        /// GET a URL every probe interval, judged as a failure percentage and a latency
        /// percentile over a sliding window (no app code needed).
        case http(HTTP)
        /// An instant query against a Prometheus server, judged by its conditions.
        case prometheus(Prometheus)
        /// The app's own failure count, reported through the SDK.
        case app(App)
        /// The new build compared with the previous one serving beside it, from the http
        /// checks' probes attributed to each (`analysis.baseline=true`; the check is named
        /// `baseline`; `BaselineComparison`).
        case baseline(BaselineSettings)

        /// `http`, `prometheus` or `app`, as `analysis.check.NAME.kind` spells it.
        public var name: String {
            switch self {
            case .http: return "http"
            case .prometheus: return "prometheus"
            case .app: return "app"
            case .baseline: return "baseline"
            }
        }
    }

    /// `kind=http`.
    public struct HTTP: Sendable, Equatable {
        /// The URL probed (`url`), http:// or https://.
        public var url: String
        /// Statuses that count as success (`success_status`, default 200-299).
        public var successStatuses: HTTPStatusSet
        /// Time between two probes (`probe_interval_ms`, default 500).
        public var probeIntervalMilliseconds: Int
        /// A probe without a complete answer within this is failed (`timeout_ms`, default 2000).
        public var timeoutMilliseconds: Int
        /// The sliding window a measurement judges (`window_s`, default the bake window), in ms.
        public var windowMilliseconds: Int
        /// Failed when more than this percentage of the window's probes failed
        /// (`max_failure_percent`, default 5).
        public var maxFailurePercent: Double
        /// Failed when the latency percentile is above this (`latency_limit_ms`); nil: no
        /// latency judgement.
        public var latencyLimitMilliseconds: Double?
        /// Which percentile (`latency_percentile`, default 99).
        public var latencyPercentile: Double
        /// Fewer probes than this in the window: inconclusive (`min_probes`, default 5).
        public var minProbes: Int

        public init(url: String, successStatuses: HTTPStatusSet = .success, probeIntervalMilliseconds: Int = 500,
                    timeoutMilliseconds: Int = 2000, windowMilliseconds: Int, maxFailurePercent: Double = 5,
                    latencyLimitMilliseconds: Double? = nil, latencyPercentile: Double = 99, minProbes: Int = 5) {
            self.url = url
            self.successStatuses = successStatuses
            self.probeIntervalMilliseconds = probeIntervalMilliseconds
            self.timeoutMilliseconds = timeoutMilliseconds
            self.windowMilliseconds = windowMilliseconds
            self.maxFailurePercent = maxFailurePercent
            self.latencyLimitMilliseconds = latencyLimitMilliseconds
            self.latencyPercentile = latencyPercentile
            self.minProbes = minProbes
        }
    }

    /// `kind=prometheus`.
    public struct Prometheus: Sendable, Equatable {
        /// The server's base URL (`address`), e.g. `http://127.0.0.1:9090`.
        public var address: String
        /// The PromQL instant query (`query`), with `$version`-style variables unsubstituted.
        public var query: String
        /// Argo's successCondition (`success`).
        public var success: AnalysisCondition?
        /// Argo's failureCondition (`failure`).
        public var failure: AnalysisCondition?
        /// The query's deadline (`timeout_ms`, default 5000).
        public var timeoutMilliseconds: Int
        /// With `analysis.baseline=true`, `compare`: the query is also run for the baseline
        /// (its `$version`, `$build`, `$slot`) at every measurement, and the two series are
        /// compared by the baseline judge; nil: the canary's value is judged by the conditions only.
        public var compare: Comparison?

        /// Which way a compared value is worse (`compare=higher_is_worse` or `lower_is_worse`).
        public enum Comparison: String, Sendable, Equatable, CaseIterable {
            case higherIsWorse = "higher_is_worse"
            case lowerIsWorse = "lower_is_worse"
        }

        public init(address: String, query: String, success: AnalysisCondition?, failure: AnalysisCondition?,
                    timeoutMilliseconds: Int = 5000, compare: Comparison? = nil) {
            self.address = address
            self.query = query
            self.success = success
            self.failure = failure
            self.timeoutMilliseconds = timeoutMilliseconds
            self.compare = compare
        }
    }

    /// `kind=app`.
    public struct App: Sendable, Equatable {
        /// Failed when the app reported more failures than this during the window
        /// (`max_failures`, default 0).
        public var maxFailures: Int

        public init(maxFailures: Int = 0) {
            self.maxFailures = maxFailures
        }

        /// The measurement of `failures`, the app's failure count since the window began:
        /// `app: 14 failures reported (limit 10)`.
        public func measurement(failures: Int, check: String) -> Measurement {
            let counted = failures == 1 ? "1 failure reported" : "\(failures) failures reported"
            return Measurement(check: check, phase: failures > maxFailures ? .failed : .successful,
                               detail: "\(counted) (limit \(maxFailures))")
        }
    }
}
