import SwitchbackCore

/// Makes one measurement of a check now (a Prometheus instant query judged by the check's
/// conditions). A protocol so the judge's schedule is tested without a server.
protocol RolloutMeasurer {
    /// Measures `check` with its query's variables already substituted (`query`). Never
    /// throws: an unreachable server or an answer of the wrong shape is an error measurement.
    func measure(_ check: AnalysisCheck, query: String) -> Measurement
}

/// Judges a step's pause with the plan's checks, with the engine's semantics (`AnalysisJudge`:
/// Argo's failureLimit, inconclusiveLimit, consecutiveErrorLimit): each check is first
/// measured one interval after the step was published (its installs need that long to take
/// it) and then every interval until the pause ends; a failed analysis ends the pause at
/// once, otherwise the verdict is the judge's at the pause's end.
struct AnalysisRolloutJudge: RolloutJudge {
    let spec: AnalysisSpec
    /// `$version`, `$previous_version`.
    let variables: [String: String]
    let clock: any RolloutClock
    let measurer: any RolloutMeasurer

    func judge(step: Int, percent: Int, until deadline: Int64, report: (String) -> Void) -> StepVerdict {
        var judge = AnalysisJudge(spec: spec)
        let start = clock.nowMilliseconds()
        var due: [Int64] = spec.checks.map { min(start + Int64($0.intervalMilliseconds), deadline) }
        while let next = due.indices.min(by: { due[$0] < due[$1] }), due[next] <= deadline {
            clock.sleep(until: due[next])
            let check = spec.checks[next]
            let measurement: Measurement
            switch check.kind {
            case .prometheus(let prometheus):
                measurement = measurer.measure(check, query: prometheus.query(substituting: variables))
            case .http, .app:
                measurement = Measurement(check: check.name, phase: .error, detail: "a fleet rollout runs kind=prometheus checks only")
            }
            report("\(measurement.check) \(measurement.phase): \(measurement.detail)")
            if let verdict = judge.record(measurement) { return StepVerdict(verdict) }
            due[next] = due[next] == deadline ? deadline + 1 : min(due[next] + Int64(check.intervalMilliseconds), deadline)
        }
        return StepVerdict(judge.finish())
    }
}

extension StepVerdict {
    /// The engine's verdict, word for word.
    init(_ verdict: AnalysisVerdict) {
        switch verdict {
        case .successful(let sentence): self = .successful(sentence)
        case .failed(let sentence): self = .failed(sentence)
        case .inconclusive(let sentence): self = .inconclusive(sentence)
        }
    }
}
