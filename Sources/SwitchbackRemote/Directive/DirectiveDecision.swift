/// What a directive tells an install to run.
public enum DirectiveDecision: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// Roll back: run the previous release slot. On the wire: `"run_previous"`.
    case runPrevious = "run_previous"
    /// Roll forward: run the current release slot. On the wire: `"run_current"`.
    case runCurrent = "run_current"

    /// A few words for an operator: "run the previous slot".
    public var summary: String {
        switch self {
        case .runPrevious: return "run the previous slot"
        case .runCurrent: return "run the current slot"
        }
    }
}
