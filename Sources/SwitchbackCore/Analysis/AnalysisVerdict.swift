/// How an analysis ended, with the sentence that says why: the measurement that failed it
/// (`http: 31% of 58 probes failed (limit 5%) over 60 s`), the check that never succeeded,
/// or what passed.
///
/// Each verdict has one word, and it is the same everywhere: the analyzer's `verdict` line,
/// the probation record's state, the history's `probation_WORD` event, the journald kind, the
/// `result` label of `switchback_analysis_results_total` and the rollout's step results.
public enum AnalysisVerdict: Sendable, Equatable, CustomStringConvertible {
    /// No check failed and every check that acts had at least one successful measurement.
    case passed(String)
    /// A check whose failure rolls back failed (more failed measurements than
    /// `failure_limit`, more errors in a row than `consecutive_error_limit`), or the app
    /// reported itself bad.
    case failed(String)
    /// A check whose failure holds (`on_failure=hold`) failed: the build keeps serving and
    /// waits for the operator's promote or abort, as after an inconclusive analysis.
    case held(String)
    /// Too many inconclusive measurements, or the window ended with a check that never
    /// succeeded (Prometheus unreachable the whole window): neither good nor bad.
    case inconclusive(String)
    /// A dry run (`analysis.dry_run=true`) reached a verdict that rolls back: nothing was done.
    case wouldRollBack(String)
    /// A dry run reached a verdict that holds (a held or an inconclusive one): nothing was done.
    case wouldHold(String)

    /// Every word, in the order the metrics list them.
    public static let words = ["passed", "failed", "held", "inconclusive", "would_roll_back", "would_hold"]

    /// The verdict's one word.
    public var word: String {
        switch self {
        case .passed: return "passed"
        case .failed: return "failed"
        case .held: return "held"
        case .inconclusive: return "inconclusive"
        case .wouldRollBack: return "would_roll_back"
        case .wouldHold: return "would_hold"
        }
    }

    /// The sentence that says why.
    public var sentence: String {
        switch self {
        case .passed(let text), .failed(let text), .held(let text), .inconclusive(let text),
             .wouldRollBack(let text), .wouldHold(let text): return text
        }
    }

    /// Reads a verdict back from its word and sentence (the analyzer's `verdict` line).
    /// `successful` is `passed` as earlier analyzers spelled it.
    public init?(word: String, sentence: String) {
        switch word {
        case "passed", "successful": self = .passed(sentence)
        case "failed": self = .failed(sentence)
        case "held": self = .held(sentence)
        case "inconclusive": self = .inconclusive(sentence)
        case "would_roll_back": self = .wouldRollBack(sentence)
        case "would_hold": self = .wouldHold(sentence)
        default: return nil
        }
    }

    /// What a dry run records instead of this verdict: a verdict that acts becomes what it
    /// would have done, with the sentence that says so; a passed one stays.
    public var dryRun: AnalysisVerdict {
        switch self {
        case .passed, .wouldRollBack, .wouldHold: return self
        case .failed(let text): return .wouldRollBack("would have rolled back: \(text)")
        case .held(let text): return .wouldHold("would have held: \(text)")
        case .inconclusive(let text): return .wouldHold("would have held, inconclusive: \(text)")
        }
    }

    public var description: String { "\(word) \(sentence)" }
}
