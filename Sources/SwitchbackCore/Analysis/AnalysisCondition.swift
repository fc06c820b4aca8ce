/// A condition on a Prometheus query's result, in Argo Rollouts' expression style
/// (`successCondition`, `failureCondition`):
///
///     result[0] < 0.05
///     len(result) > 0 && (result[0] <= 250 || isNaN(result[0]))
///
/// - `result` is the first sample's value (of a vector or a scalar), `result[i]` the i-th
///   sample's, `len(result)` the number of samples;
/// - numbers (`0.05`, `-1`, `2e3`), comparisons `<` `<=` `>` `>=` `==` `!=`, `&&`, `||`,
///   `!`, parentheses, `isNaN(x)`, `true`, `false`;
/// - precedence from loosest: `||`, `&&`, comparison, then `!` and unary `-` on one operand;
///   `&&` and `||` short-circuit, so `len(result) > 0 && result[0] < 1` is false, not an
///   error, on an empty vector;
/// - comparisons are IEEE's: any comparison with NaN is false except `!=`.
///
/// A condition that does not parse, or mixes numbers and truths (`result[0] && true`), is
/// refused when the settings are read (`AnalysisSpecError.Code.invalidCondition`), never at a
/// measurement. Evaluating `result[i]` when the query returned fewer samples throws an
/// `EvaluationError`: an *error* measurement ("the query returned no samples").
public struct AnalysisCondition: Sendable, Equatable, CustomStringConvertible {
    /// The condition as written.
    public let text: String
    /// The parsed expression (a truth).
    let root: Node

    /// Parses `text`; throws a `SyntaxError` saying what was found where.
    public init(parsing text: String) throws(SyntaxError) {
        var parser = Parser(text)
        self.text = text
        self.root = try parser.parseCondition()
    }

    /// Whether the condition holds for these sample values. Throws when it needs a sample
    /// the result does not have.
    public func evaluate(_ samples: [Double]) throws(EvaluationError) -> Bool {
        try root.truth(samples)
    }

    public var description: String { text }

    /// Why a condition does not parse: the problem and its column (1-based), e.g.
    /// "expected a number or result at column 13, found end of text".
    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var column: Int
        public var description: String { message }
    }

    /// Why a condition could not be evaluated: "the query returned no samples".
    public struct EvaluationError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The parsed expression. Numbers and truths are told apart when parsing, so `truth`
    /// and `number` are only ever called on nodes of their type.
    indirect enum Node: Sendable, Equatable {
        case number(Double)
        case sample(Int)
        case count
        case negate(Node)
        case boolean(Bool)
        case isNaN(Node)
        case compare(Comparison, Node, Node)
        case not(Node)
        case and(Node, Node)
        case or(Node, Node)

        var isTruth: Bool {
            switch self {
            case .number, .sample, .count, .negate: return false
            case .boolean, .isNaN, .compare, .not, .and, .or: return true
            }
        }

        func number(_ samples: [Double]) throws(EvaluationError) -> Double {
            switch self {
            case .number(let value): return value
            case .sample(let index):
                guard index < samples.count else {
                    let message = samples.isEmpty ? "the query returned no samples"
                        : "the query returned \(samples.count) sample\(samples.count == 1 ? "" : "s"), none at result[\(index)]"
                    throw EvaluationError(message: message)
                }
                return samples[index]
            case .count: return Double(samples.count)
            case .negate(let node): return -(try node.number(samples))
            default: preconditionFailure("AnalysisCondition: a truth evaluated as a number")
            }
        }

        func truth(_ samples: [Double]) throws(EvaluationError) -> Bool {
            switch self {
            case .boolean(let value): return value
            case .isNaN(let node): return try node.number(samples).isNaN
            case .compare(let comparison, let left, let right):
                return comparison.holds(try left.number(samples), try right.number(samples))
            case .not(let node): return !(try node.truth(samples))
            case .and(let left, let right): return try left.truth(samples) ? try right.truth(samples) : false
            case .or(let left, let right): return try left.truth(samples) ? true : try right.truth(samples)
            default: preconditionFailure("AnalysisCondition: a number evaluated as a truth")
            }
        }
    }

    enum Comparison: String, Sendable, Equatable {
        case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">=", equal = "==", notEqual = "!="

        func holds(_ left: Double, _ right: Double) -> Bool {
            switch self {
            case .less: return left < right
            case .lessOrEqual: return left <= right
            case .greater: return left > right
            case .greaterOrEqual: return left >= right
            case .equal: return left == right
            case .notEqual: return left != right
            }
        }
    }
}
