import Foundation
import Testing

/// A regression guard for the launcher's start-up that does not depend on the clock: the
/// instructions a steady-state start executes (build good, slot verified before, the sample's
/// `version`), counted by valgrind's callgrind, which gives the same count for the same
/// binaries, inputs and environment whatever else the machine is doing. The ceiling has 10%
/// headroom over the count measured when it was set (docs/benchmarks.md); a change that
/// crosses it makes every start slower and must say why, or be undone.
@Suite struct InstructionCountTests {
    /// Measured 9,242,452 on 2026-11-22 (Swift 6.3.1, Debian 12, x86_64), after the start
    /// path's trim (issue 15); 9,363,697 before it. 11,469,182 on 2026-11-25, since the bundled
    /// runtime binds every symbol at load (issue 25: full RELRO on every shipped file, the
    /// toolchain's libraries included): the dynamic loader resolves all of libswiftCore's and
    /// FoundationEssentials' imports up front instead of on first call, +1.9 million
    /// instructions (9,544,405 with the same tree and lazily bound libraries).
    static let ceiling = 12_600_000

    @Test func aSteadyStateStartStaysUnderItsInstructionCeiling() throws {
        let valgrind = try shell("sh", "-c", "command -v valgrind")
        try #require(valgrind.status == 0, "valgrind is not installed; scripts/test installs it (Debian's valgrind package).")
        let t = try TestBundle()
        // The first start verifies the slot (SHA-256), opens it with RTLD_NOW and marks the
        // build good; the second is the steady state every later start repeats.
        #expect(try t.launcher("version").status == 0)
        #expect(try t.launcher("version").status == 0)
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "SWITCHBACK_SLOT")
        env["SWITCHBACK_STATE_DIR"] = t.state
        let run = try runProcess("/usr/bin/env", ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                                  t.bundle + "/bin/launcher", "version"], environment: env)
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout == (try t.manifestValue("current.version")) + "\n")
        let line = try #require(run.stderr.split(separator: "\n").first { $0.contains("Collected :") }, "\(run.stderr)")
        let count = try #require(Int(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)))
        print("InstructionCountTests: a steady-state start executed \(count) instructions (ceiling \(Self.ceiling))")
        #expect(count <= Self.ceiling, "a steady-state start executed \(count) instructions, over the ceiling of \(Self.ceiling)")
        #expect(count > 1_000_000, "\(count) instructions is too few for a start: is callgrind counting the launcher?")
    }
}
