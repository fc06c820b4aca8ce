import SwitchbackCore

extension BundleOptions {
    /// The sentence for `analysis.*` settings the analyzer would refuse, or nil.
    static func analysisProblem(_ settings: [String: String]) -> String? {
        do { _ = try AnalysisSpec.parse(settings) } catch { return error.message }
        return nil
    }
}
