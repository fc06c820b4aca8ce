/// How an analysis ended, with the sentence that says why: the measurement that failed it
/// (`http: 31% of 58 probes failed (limit 5%) over 60 s`), the check that never succeeded,
/// or what passed.
public enum AnalysisVerdict: Sendable, Equatable, CustomStringConvertible {
    /// No check failed and every check had at least one successful measurement.
    case successful(String)
    /// A check failed (more failed measurements than `failure_limit`, more errors in a row
    /// than `consecutive_error_limit`), or the app reported itself bad.
    case failed(String)
    /// Too many inconclusive measurements, or the window ended with a check that never
    /// succeeded (Prometheus unreachable the whole window): neither good nor bad.
    case inconclusive(String)

    /// `successful`, `failed` or `inconclusive`: the word of the analyzer's `verdict` line.
    public var word: String {
        switch self {
        case .successful: return "successful"
        case .failed: return "failed"
        case .inconclusive: return "inconclusive"
        }
    }

    /// The sentence that says why.
    public var sentence: String {
        switch self {
        case .successful(let text), .failed(let text), .inconclusive(let text): return text
        }
    }

    /// Reads a verdict back from its word and sentence (the analyzer's `verdict` line).
    public init?(word: String, sentence: String) {
        switch word {
        case "successful": self = .successful(sentence)
        case "failed": self = .failed(sentence)
        case "inconclusive": self = .inconclusive(sentence)
        default: return nil
        }
    }

    public var description: String { "\(word) \(sentence)" }
}
