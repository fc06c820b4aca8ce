@_spi(Fuzzing) import AppVersions

/// An AppVersions ledger file: parsed and verified as the file store does, folded into a
/// scope's state as the migrator does, and rewritten and re-read unchanged.
enum LedgerTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
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
