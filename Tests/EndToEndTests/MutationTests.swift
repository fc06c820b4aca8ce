import Foundation
import Testing

/// Crafted files never crash anything: scripts/mutate, in reduced form, through a private
/// copy of the test bundle. Every mutated state file, ledger and manifest must leave
/// `launcher version`, `rollbackctl status --json` (valid JSON) and `rollbackctl history`
/// alive (no death by signal) and quick (under 5 s). The full run is 20,000 mutations
/// (docs/fuzzing.md).
struct MutationTests {
    @Test func threeHundredMutatedFilesKillNothing() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/mutate").path
        guard FileManager.default.fileExists(atPath: TestBundle.source + "/manifest") else {
            Issue.record("No bundle at \(TestBundle.source): run the tests with scripts/test, which builds it first.")
            return
        }
        let findings = try makeTemporaryDirectory()
        let result = try runProcess("/usr/bin/env", ["python3", script, "--count", "300", "--seed", "20261122",
                                                     "--bundle", TestBundle.source, "--out", findings],
                                    deadline: 900)
        #expect(result.status == 0, "scripts/mutate found crashes or hangs (saved in \(findings)):\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("deaths by signal: 0; runs over 5 s: 0; status --json not JSON: 0"), "\(result.stdout)")
    }

    /// A slot dated after 2262 overflowed the fingerprint's nanoseconds (SIGILL in the
    /// launcher); a marker dated anywhere must not overflow the remote check's age either.
    @Test func filesDatedPast2262StartNormally() throws {
        let t = try TestBundle()
        try shell("touch", "-d", "2300-01-01", t.slotPath(.current))
        let first = try t.launcher("version")
        #expect(first.status == 0 && first.stdout == "1.2.0\n", "\(first)")
        let second = try t.launcher("version")
        #expect(second.status == 0 && second.stdout == "1.2.0\n", "\(second)")
        let status = try t.rollbackctl("status", "--json")
        #expect(status.status == 0, "\(status)")
    }
}
