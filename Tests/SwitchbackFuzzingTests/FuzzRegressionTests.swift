import Foundation
import SwitchbackCore
import SwitchbackFuzzing
import Testing

/// Every input a fuzz run or the mutation script ever crashed with, kept in
/// Fuzz/Regressions/<target>/, and every seed in Fuzz/Corpus/<target>/, runs through the same
/// target function libFuzzer drives: it must not trap, must keep its invariants, and — where
/// the file's name says so — end as expected (`*.parsed` or `*.rejected`).
struct FuzzRegressionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz").path

    static func files(_ kind: String, _ target: FuzzTarget) -> [String] {
        let directory = root + "/\(kind)/\(target.rawValue)"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { directory + "/" + $0 }
    }

    @Test(arguments: FuzzTarget.allCases)
    func keptCrashesNoLongerCrash(_ target: FuzzTarget) throws {
        for path in Self.files("Regressions", target) {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            let outcome: FuzzOutcome
            do { outcome = try target.run(bytes) } catch {
                Issue.record("\(path): \(error)")
                continue
            }
            if path.hasSuffix(".parsed") { #expect(outcome.isParsed, "\(path): \(outcome)") }
            if path.hasSuffix(".rejected") { #expect(!outcome.isParsed, "\(path): \(outcome)") }
        }
    }

    @Test(arguments: FuzzTarget.allCases)
    func seedCorpusParses(_ target: FuzzTarget) throws {
        let seeds = Self.files("Corpus", target)
        #expect(!seeds.isEmpty, "no seeds in Fuzz/Corpus/\(target.rawValue)")
        for path in seeds {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            do { _ = try target.run(bytes) } catch { Issue.record("\(path): \(error)") }
        }
    }

    @Test func timesOutsideTheRangeFormatWithoutTrapping() {
        // The adversary's find: gmtime's year + 1900 overflowed for times near 6.8e16 (year 2^31, seconds 67767976233532800...67768036191676799).
        for seconds: Int64 in [.min, -1, 68_000_000_000_000_000, 67_768_000_000_000_000, 67_767_976_233_532_800, 67_768_036_191_676_799, .max, 253_402_300_800] {
            #expect(formatUTC(seconds) == "<invalid time \(seconds)>")
        }
        #expect(formatUTC(0) == "1970-01-01 00:00:00 UTC")
        #expect(formatUTC(253_402_300_799) == "9999-12-31 23:59:59 UTC")
        #expect(formatRFC3339(1_795_317_164) == "2026-11-22T03:12:44Z")
        #expect(formatRFC3339(-5) == "<invalid time -5>")
    }
}
