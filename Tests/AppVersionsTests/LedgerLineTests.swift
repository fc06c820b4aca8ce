@testable import AppVersions
import Foundation
import Testing

@Suite("Ledger lines")
struct LedgerLineTests {
    @Test("Dates survive a ledger line exactly", arguments: [1, 99, 2024] as [UInt64])
    func datesRoundTripExactly(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        var samples: [Double] = [0, 1, -1, 0.1, 700_000_000, 817_009_954.2315396, -978_307_200.5, 1e-7, 4.0e9 + 0.123456789]
        for _ in 0..<2000 {
            samples.append(Double.random(in: -2e9...4e9, using: &generator))
            samples.append(Double(Int.random(in: 0...1_000_000_000, using: &generator)) / 1000)
        }
        for seconds in samples {
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            let entry = LedgerEntry(.reset(date: date))
            let again = try LedgerEntry(line: entry.line)
            #expect(again == entry, "seed \(seed): \(seconds) became \(again.line)")
        }
    }
}
