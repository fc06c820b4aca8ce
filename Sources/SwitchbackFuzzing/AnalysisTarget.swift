import SwitchbackCore

/// The `analysis.*` settings (a manifest's, an override's, a rollout plan's): parsed, then
/// every condition evaluated over awkward sample vectors (none, NaN, infinities, many), every
/// check measured, and a judge fed the measurements to its verdict. The input is also read
/// whole as one condition, the text an operator types after `success=`.
enum AnalysisTarget {
    static let vectors: [[Double]] = [[], [0.01], [.nan], [.infinity, -.infinity], [0, 1, 2, 3, 4], [-0.0, 1e308, .leastNonzeroMagnitude]]

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        var conditions = 0
        if let text = String(validating: bytes, as: UTF8.self) {
            if let condition = try? AnalysisCondition(parsing: text) {
                conditions += 1
                for vector in vectors { _ = try? condition.evaluate(vector) }
            } else {
                do { _ = try AnalysisCondition(parsing: text) } catch {
                    try check(!error.message.isEmpty && error.column >= 1, "a condition refused without a sentence or a column")
                }
            }
        }
        let text: KeyValueText
        do { text = try KeyValueText.parse(bytes, describing: "/fuzz/analysis") } catch { return try rejected(error.message) }
        let spec: AnalysisSpec?
        do { spec = try AnalysisSpec.parse(AnalysisSpec.settings(in: text)) } catch {
            try check(error.message.contains(error.key), "a spec error that does not name its key: \(error.message)")
            return try rejected(error.message)
        }
        guard let spec else { return .parsed("no analysis; \(conditions) condition") }
        try check(spec.windowSeconds >= 1 && spec.intervalSeconds >= 1, "a window or an interval below 1")
        var judge = AnalysisJudge(spec: spec)
        for check in spec.checks {
            switch check.kind {
            case .http(let settings):
                var window = HTTPProbeWindow(settings: settings)
                for index in 0..<20 {
                    window.record(.init(at: Int64(index) * Int64(settings.probeIntervalMilliseconds), isSuccess: index % 3 != 0,
                                        latencyMilliseconds: index % 5 == 0 ? nil : Double(index)))
                }
                judge.record(window.measure(at: Int64(settings.windowMilliseconds), check: check.name))
            case .prometheus(let settings):
                _ = settings.query(substituting: ["version": "1.2.0\"\\", "build": "b", "slot": "current"])
                for vector in vectors { judge.record(settings.measurement(of: vector, check: check.name)) }
            case .app(let settings):
                judge.record(settings.measurement(failures: Int.max, check: check.name))
            case .baseline(let settings):
                let canary = (0..<20).map { BaselineComparison.Sample(isSuccess: $0 % 4 != 0, latencyMilliseconds: Double($0 * 3)) }
                let baseline = (0..<20).map { BaselineComparison.Sample(isSuccess: true, latencyMilliseconds: Double($0)) }
                let results = BaselineComparison.compare(check: "http", canary: canary, baseline: baseline, settings: settings) ?? []
                judge.record(BaselineComparison.measurement(name: check.name, results: results, settings: settings, counts: (20, 20)).measurement)
            }
        }
        let verdict = judge.finish()
        try SwitchbackFuzzing.check(!verdict.sentence.isEmpty, "a verdict without a sentence")
        return .parsed("\(spec.checks.count) checks over \(spec.windowSeconds) s: \(verdict)")
    }
}
