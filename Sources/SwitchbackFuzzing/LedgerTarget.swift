@_spi(Fuzzing) import AppVersions

/// An AppVersions ledger file: parsed and verified as the file store does, folded into a
/// scope's state as the migrator does, and rewritten and re-read unchanged.
enum LedgerTarget {
    /// The input as it is (the checksum must hold), then resealed with the right checksum so
    /// mutations reach the entry lines, as a hand edit would.
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let first = try parseAndFold(bytes)
        let resealed = LedgerFileParsing.resealed(bytes)
        if resealed == bytes { return first }
        let second = try parseAndFold(resealed)
        if case .parsed = first { try check(second == first, "a ledger that parsed changed when resealed") }
        return first.isParsed ? first : second
    }

    static func parseAndFold(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let entries: [LedgerEntry]
        do { entries = try LedgerFileParsing.parse(bytes) } catch { return try rejected("\(error)") }
        let summary = LedgerFileParsing.fold(entries)
        let again: [LedgerEntry]
        do { again = try LedgerFileParsing.parse(LedgerFileParsing.file(of: entries)) } catch {
            throw FuzzFailure("a rewritten ledger does not parse: \(error)")
        }
        try check(again.map(\.line) == entries.map(\.line), "ledger entries changed in a round trip")
        return .parsed(summary)
    }
}
