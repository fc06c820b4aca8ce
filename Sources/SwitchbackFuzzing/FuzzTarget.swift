/// One parser under fuzz: the bytes of one file (or fetched document) in, and everything the
/// product does with the parsed values — formatting every time, the summaries and the
/// explanation, the arithmetic, and a serialize/re-parse round trip where one holds.
///
/// The same function runs under libFuzzer (`scripts/fuzz`, Sources/switchback-fuzz) and in the
/// normal test suite over the kept regressions (Fuzz/Regressions/<target>/), so a crash found
/// once is checked by every `swift test`. See docs/fuzzing.md.
public enum FuzzTarget: String, CaseIterable, Sendable {
    case state
    case health
    case history
    case verifiedSlots = "verified-slots"
    case remote
    case dataState = "data-state"
    case supervisor
    case probation
    case manifest
    case directive
    case ledger
    case analysis
    case elf

    /// Runs the target over `bytes`. Returns what the parser made of them — `.parsed` with a
    /// summary of the values, or `.rejected` with the error's sentence. Throws `FuzzFailure`
    /// when an invariant breaks (a round trip that changes the value, a rejection without a
    /// sentence); a trap is a crash, which libFuzzer reports.
    public func run(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        switch self {
        case .state: return try StateTargets.state(bytes)
        case .health: return try StateTargets.health(bytes)
        case .history: return try StateTargets.history(bytes)
        case .verifiedSlots: return try StateTargets.verifiedSlots(bytes)
        case .remote: return try StateTargets.remote(bytes)
        case .dataState: return try StateTargets.dataState(bytes)
        case .supervisor: return try StateTargets.supervisor(bytes)
        case .probation: return try StateTargets.probation(bytes)
        case .manifest: return try ManifestTarget.run(bytes)
        case .directive: return try DirectiveTarget.run(bytes)
        case .ledger: return try LedgerTarget.run(bytes)
        case .analysis: return try AnalysisTarget.run(bytes)
        case .elf: return try ELFTarget.run(bytes)
        }
    }
}

/// What a target made of its input.
public enum FuzzOutcome: Sendable, Equatable {
    /// The input parsed; the summary names the values (and everything derived from them).
    case parsed(String)
    /// The input was refused as damaged, with this sentence.
    case rejected(String)

    public var isParsed: Bool { if case .parsed = self { return true } else { return false } }
}

/// A broken invariant: what was expected and what happened.
public struct FuzzFailure: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Checks `condition`; throws a `FuzzFailure` with `message` when it is false.
func check(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFailure) {
    if !condition { throw FuzzFailure(message()) }
}

/// Checks an error's sentence: one non-empty sentence a user can act on.
func rejected(_ message: String) throws(FuzzFailure) -> FuzzOutcome {
    try check(!message.isEmpty, "a rejection without a sentence")
    return .rejected(message)
}
