import Foundation
import Testing

/// rollbackctl speaks like argument-parser: errors on stderr as "Error: ...", usage errors
/// exit 64 with a usage line, other failures exit 1, help and version on stdout.
@Suite struct CommandLineTests {
    @Test func helpAndVersionGoToStdout() throws {
        let t = try TestBundle()
        let help = try t.rollbackctl("--help")
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: "))
        #expect(help.stdout.contains("USAGE: rollbackctl"))
        for subcommand in ["status", "rollback", "rollforward", "history", "verify", "inspect"] {
            let sub = try t.rollbackctl(subcommand, "--help")
            #expect(sub.status == 0)
            #expect(sub.stdout.contains("USAGE: rollbackctl \(subcommand)"))
        }
        let version = try t.rollbackctl("--version")
        #expect(version.status == 0)
        #expect(version.stdout.hasPrefix("rollbackctl (Switchback) "))
    }

    @Test(arguments: [
        (["frobnicate"], "Error: Unknown subcommand 'frobnicate'.", "rollbackctl --help"),
        ([], "Error: Missing subcommand.", "rollbackctl --help"),
        (["status", "--jsn"], "Error: Unknown option '--jsn'.", "rollbackctl status --help"),
        (["rollback", "--reason"], "Error: Missing value for '--reason'.", "rollbackctl rollback --help"),
        (["rollforward", "extra"], "Error: Unexpected argument 'extra'.", "rollbackctl rollforward --help"),
        (["inspect"], "Error: Missing the library's path.", "rollbackctl inspect --help"),
    ])
    func usageErrorsExit64(arguments: [String], error: String, help: String) throws {
        let t = try TestBundle()
        let result = try t.run(t.bundle + "/bin/rollbackctl", arguments)
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == error)
        #expect(lines.count == 3 && lines[1].hasPrefix("Usage: rollbackctl"))
        #expect(lines.last?.contains("See '\(help)'") == true)
    }

    @Test func aBundleWithoutManifestFailsWithExit1() throws {
        let t = try TestBundle()
        try FileManager.default.removeItem(atPath: t.bundle + "/manifest")
        let result = try t.rollbackctl("status")
        #expect(result.status == 1)
        #expect(result.stderr == "Error: The bundle has no manifest at \(t.bundle)/manifest; rebuild it with scripts/bundle.\n")
        let launch = try t.launcher()
        #expect(launch.status == 70)
        #expect(launch.stderr == "launcher: The bundle has no manifest at \(t.bundle)/manifest; rebuild it with scripts/bundle.\n")
    }

    @Test func inspectOfSomethingElseFails() throws {
        let t = try TestBundle()
        let result = try t.rollbackctl("inspect", t.bundle + "/manifest")
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("Error: dlopen failed: "))
        let missing = try t.rollbackctl("inspect", "/nonexistent.so")
        #expect(missing.status == 1)
        #expect(missing.stderr == "Error: The library /nonexistent.so does not exist.\n")
    }
}
