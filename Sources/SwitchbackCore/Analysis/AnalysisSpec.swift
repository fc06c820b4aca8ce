/// The analysis of a bake window or a rollout step, from the `analysis.*` settings
/// (docs/analysis.md):
///
///     analysis.window_s=60
///     analysis.interval_s=10
///     analysis.failure_limit=0
///     analysis.checks=http,errors
///     analysis.check.http.kind=http
///     analysis.check.http.url=http://127.0.0.1:8080/notes
///     analysis.check.errors.kind=prometheus
///     analysis.check.errors.address=http://127.0.0.1:9090
///     analysis.check.errors.query=sum(rate(errors_total{version="$version"}[30s]))
///     analysis.check.errors.success=result[0] < 0.05
///
/// Limits follow Argo Rollouts' AnalysisTemplate: a check fails the analysis when it has more
/// failed measurements than `failureLimit`; more inconclusive ones than `inconclusiveLimit`
/// end it inconclusive; errors fail it only when `consecutiveErrorLimit` is set and more of
/// them come in a row (`AnalysisJudge`). What a failed check does is its own
/// (`analysis.check.NAME.on_failure`: rollback, hold or record), and `analysis.dry_run=true`
/// acts on no verdict.
public struct AnalysisSpec: Sendable, Equatable {
    /// The bake window (`analysis.window_s`), at least 1.
    public var windowSeconds: Int
    /// The default time between two measurements of a check (`analysis.interval_s`, 10).
    public var intervalSeconds: Int
    /// Argo's failureLimit (`analysis.failure_limit`, 0).
    public var failureLimit: Int
    /// Argo's inconclusiveLimit (`analysis.inconclusive_limit`, 0).
    public var inconclusiveLimit: Int
    /// Argo's consecutiveErrorLimit (`analysis.consecutive_error_limit`); nil: errors never
    /// fail the analysis, they leave it inconclusive.
    public var consecutiveErrorLimit: Int?
    /// The checks, in `analysis.checks` order. None: the window only waits (crashes still
    /// count, as they always do).
    public var checks: [AnalysisCheck]
    /// A dry run (`analysis.dry_run`): every check runs and is judged as usual, and a verdict
    /// that would act is recorded as what it would have done (`AnalysisVerdict.dryRun`).
    public var dryRun: Bool

    public init(windowSeconds: Int, intervalSeconds: Int = 10, failureLimit: Int = 0, inconclusiveLimit: Int = 0,
                consecutiveErrorLimit: Int? = nil, checks: [AnalysisCheck] = [], dryRun: Bool = false) {
        self.windowSeconds = windowSeconds
        self.intervalSeconds = intervalSeconds
        self.failureLimit = failureLimit
        self.inconclusiveLimit = inconclusiveLimit
        self.consecutiveErrorLimit = consecutiveErrorLimit
        self.checks = checks
        self.dryRun = dryRun
    }

    /// The longest bake window: a week.
    public static let maximumWindowSeconds = 604_800
    /// The most checks one analysis has.
    public static let maximumChecks = 32

    /// The `analysis.*` pairs of `text` (the first line of a key counts, as for every
    /// lookup), for `parse`.
    public static func settings(in text: KeyValueText) -> [String: String] { text.settings(withPrefix: "analysis.") }

    /// Reads the `analysis.*` keys of `settings` (other keys are ignored). Returns nil when
    /// there is no analysis: `analysis.window_s` is 0 (the analysis turned off, checks or
    /// not), or absent with no check (absent with checks is a `missingKey` error). Throws the first
    /// problem, in key order: a key no setting has, a value out of range, a check without a
    /// key it needs, a condition that does not parse. An empty value is an absent key.
    public static func parse(_ settings: [String: String]) throws(AnalysisSpecError) -> AnalysisSpec? {
        var reader = SettingsReader(settings: settings.filter { $0.key.hasPrefix("analysis.") && !$0.value.isEmpty })
        return try reader.spec()
    }
}
