/// A problem with the `analysis.*` settings, found when they are read (bundling, the
/// analyzer's start, a rollout plan): one sentence naming the key, what was found and what
/// to write instead. A spec that parses never crashes a measurement later.
public struct AnalysisSpecError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem it is; tests and callers branch on it.
    public enum Code: String, Sendable {
        /// A key under `analysis.` that no setting has (a typo, or a key of another kind of check).
        case unknownKey
        /// A key a check needs is absent (`url` of an http check, `query` of a prometheus check).
        case missingKey
        /// A value that does not read, or is out of its range.
        case invalidValue
        /// A `success` or `failure` condition that does not parse.
        case invalidCondition
    }

    /// What kind of problem it is.
    public var code: Code
    /// The key involved (`analysis.check.errors.success`).
    public var key: String
    /// One whole sentence: what was found and what to write.
    public var message: String

    public init(_ code: Code, key: String, _ message: String) {
        self.code = code
        self.key = key
        self.message = message
    }

    public var description: String { message }
}
