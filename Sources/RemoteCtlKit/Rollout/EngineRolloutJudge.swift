import SwitchbackAnalysis
import SwitchbackCore

/// Judges a step's pause with the plan's checks through the analysis engine itself
/// (`AnalysisRun`, the one the bake window's analyzer runs): each check measured one interval
/// after the step was published (its installs need that long to take it) and then every
/// interval, judged with Argo's semantics (`AnalysisJudge`); a failed check ends the pause at
/// once, otherwise the verdict is the judge's at the pause's end.
struct EngineRolloutJudge: RolloutJudge {
    /// The plan's checks, the pause as their window.
    let spec: AnalysisSpec
    /// `$version`, `$previous_version`.
    let variables: [String: String]

    func judge(step: Int, percent: Int, until deadline: Int64, report: @escaping @Sendable (RolloutJudgeReport) -> Void) -> AnalysisVerdict {
        let verdict = AnalysisRun(spec: spec, variables: variables).run(endingAt: deadline) { event in
            if case .measurement(let measurement) = event { report(.measurement(measurement)) }
        }
        return verdict
    }
}
