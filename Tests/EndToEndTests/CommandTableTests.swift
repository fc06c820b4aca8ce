import Foundation
@testable import RollbackCtlKit
import Testing

/// The command table: parsing, generated help and usage errors, and the status document's
/// JSON, without a bundle or a process.
@Suite struct CommandTableTests {
    final class Captured: @unchecked Sendable {
        var out: [String] = []
        var error: [String] = []
    }

    static func run(_ arguments: [String]) -> (status: Int32, out: [String], error: [String]) {
        let captured = Captured()
        let console = Console(writeOut: { captured.out.append($0) }, writeError: { captured.error.append($0) })
        let status = RollbackCtl.main(arguments, console: console, remote: [])
        return (status, captured.out, captured.error)
    }

    @Test func commandNamesAreUniqueAndEveryOneIsListedInTheToolsHelp() {
        let names = CommandTable.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names == ["status", "rollback", "rollforward", "history", "mark-good", "mark-bad", "promote", "abort", "bake-window",
                          "verify", "inspect", "sync", "keygen", "sign", "rollout", "rollout-status"])
        let help = Help.tool(CommandTable.all)
        for command in CommandTable.all {
            #expect(help.contains("\n  \(command.name)" + String(repeating: " ", count: 20 - command.name.count) + command.abstract))
        }
    }

    @Test func eachCommandsHelpIsRenderedFromItsConfiguration() {
        for command in CommandTable.all {
            let help = Help.command(command)
            #expect(help.hasPrefix("OVERVIEW: \(command.overview.split(separator: "\n")[0])"))
            #expect(help.contains("\nUSAGE: rollbackctl \(command.name)"))
            for option in command.options {
                #expect(help.contains("\n  \(option.synopsis) "), "\(command.name): \(option.name)")
            }
            #expect(help.contains("\n  -h, --help          Show help information."))
        }
        #expect(Help.command(RollbackCommand.configuration).contains("""
              --force             Roll back even when the data cannot be converted back: the
                                  data is archived (never deleted) and the previous build
                                  starts without it.
            """))
        #expect(Help.command(MarkGoodCommand.configuration).contains("USAGE: rollbackctl mark-good [SLOT]\n\nARGUMENTS:\n  SLOT "))
        #expect(Help.command(CommandConfiguration.keygen).contains("USAGE: rollbackctl keygen --out DIR\n"))
        #expect(Help.command(CommandConfiguration.sync).hasSuffix("EXIT STATUS:\n  0 applied, unchanged or not applicable; 1 refused, unreachable or not configured."))
    }

    @Test func theParserTakesOnlyWhatTheConfigurationDeclares() throws {
        let parsed = try ParsedArguments(["--key", "a.key", "--key=b.key", "--reason=why", "--state-dir", "/s"],
                                         for: CommandConfiguration.sign)
        #expect(parsed.lists["--key"] == ["a.key", "b.key"])
        #expect(parsed.options["--reason"] == "why")
        #expect(parsed.options["--state-dir"] == "/s")
        #expect(try ParsedArguments(["--json"], for: StatusCommand.configuration).wantsJSON)
        #expect(throws: CommandError.usage("Unknown option '--jsn'.", subcommand: "status")) {
            try ParsedArguments(["--jsn"], for: StatusCommand.configuration)
        }
        #expect(throws: CommandError.usage("Unknown option '--json=yes'.", subcommand: "status")) {
            try ParsedArguments(["--json=yes"], for: StatusCommand.configuration)
        }
        #expect(throws: CommandError.usage("Missing value for '--reason'.", subcommand: "rollback")) {
            try ParsedArguments(["--reason"], for: RollbackCommand.configuration)
        }
        #expect(throws: CommandError.usage("Unexpected argument 'b'.", subcommand: "mark-bad")) {
            try ParsedArguments(["a", "b"], for: MarkBadCommand.configuration)
        }
        #expect(throws: CommandError.usage("Missing the library's path.", subcommand: "inspect")) {
            try ParsedArguments([], for: InspectCommand.configuration)
        }
        // --help wins over a wrong argument count.
        #expect(try ParsedArguments(["--help"], for: InspectCommand.configuration).wantsHelp)
    }

    @Test func usageErrorsExit64WithTheCommandsUsageLine() {
        let result = Self.run(["rollforward", "extra"])
        #expect(result.status == 64)
        #expect(result.out.isEmpty)
        #expect(result.error == ["Error: Unexpected argument 'extra'.", "Usage: rollbackctl rollforward [--reason TEXT]",
                                 "  See 'rollbackctl rollforward --help' for help."])
        let unknown = Self.run(["frobnicate"])
        #expect(unknown.status == 64)
        #expect(unknown.error[1] == "Usage: rollbackctl [--state-dir DIR] [--bundle DIR] <subcommand> [options]")
        let long = Self.run(["rollback", "--reason", String(repeating: "x", count: 10_000)])
        #expect(long.status == 64)
        #expect(long.error.first?.hasPrefix("Error: The reason is 10000 bytes long") == true)
    }

    @Test func helpAndVersionGoToStdout() {
        let help = Self.run(["verify", "--help"])
        #expect(help.status == 0 && help.error.isEmpty)
        #expect(help.out == [Help.command(VerifyCommand.configuration)])
        let version = Self.run(["--version"])
        #expect(version.status == 0 && version.out == [ToolConfiguration.version])
    }

    @Test func errorCodesDecideTheExitCode() {
        #expect(CommandError.usage("x", subcommand: nil).exitCode == 64)
        #expect(CommandError.failure("x").exitCode == 1)
        #expect(CommandError.failure("x", code: .stateNotWritable).exitCode == 1)
        #expect(CommandError.failure("x", code: .switchRefused).code == .switchRefused)
    }

    static let document = StatusDocument(
        appID: "app", activeSlot: "previous", refusal: nil, reasonCode: "rollback", rollback: true, source: "cli", reason: "a \"quoted\" \\ reason\n/x",
        changedAt: "2026-01-01T00:00:00Z", explanation: "The next start runs the previous slot (1.0.0) because of \u{1}.",
        warning: nil, writeProblem: nil, pendingSwitch: false, firstRelease: false,
        fromBuild: .init(sha256: "ab", version: "1.1.0"), toBuild: nil, stateProblem: nil,
        stateTrust: .init(trusted: true, reason: nil),
        slots: ["current": .init(version: "1.1.0", build: "b", abi: "abi", sha256: "ab", ok: true, problem: nil,
                                 health: .init(verdict: "trial", triesLeft: 2, markedBy: nil, failedStarts: 1, note: nil,
                                               lastGoodAt: nil, summary: "on trial"))],
        stateDirectory: "/s", supervisor: nil, bundle: "/b",
        remote: .init(intervalSeconds: 60, url: "https://x/d.json", lastAttemptAt: nil, lastSuccessAt: nil, outcome: "applied",
                      code: nil, reason: nil, acceptedSerial: UInt64.max, highestSeenSerial: 7, lastVerifiedAt: nil,
                      heldExpiresAt: nil, consecutiveFailures: 0, maxStalenessSeconds: 3600, stale: false, staleCause: nil,
                      staleSince: nil, staleReason: nil, recordProblem: nil),
        data: .init(published: false, ignored: nil, managed: nil, readerFloor: nil, publishedBy: nil, publishedAt: nil,
                    rollbackTo: "1.0.0", rollbackPlan: nil, rollbackDataSafe: nil, detail: nil, lastArchive: nil))

    @Test func theStatusDocumentIsWrittenWithoutFoundationAndDecodedWithIt() throws {
        let text = JSONWriter.render(Self.document)
        // Every key stays, nil as null; keys sorted; the old escaping.
        #expect(text.hasPrefix("{\n  \"active_slot\" : \"previous\",\n  \"app_id\" : \"app\",\n"))
        #expect(text.contains("\n  \"supervisor\" : null,\n"))
        #expect(text.contains("\n  \"warning\" : null,\n  \"write_problem\" : null\n}"))
        #expect(text.contains("\"reason\" : \"a \\\"quoted\\\" \\\\ reason\\n/x\""))
        #expect(text.contains("because of \\u0001."))
        #expect(text.contains("\"accepted_serial\" : 18446744073709551615"))
        let decoded = try JSONDecoder().decode(StatusDocument.self, from: Data(text.utf8))
        #expect(decoded == Self.document)
        // The same keys as Foundation's own encoder writes for the non-nil fields.
        let foundation = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.document)) as! [String: Any]
        let ours = try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Any]
        #expect(Set(foundation.keys).isSubset(of: Set(ours.keys)))
        #expect(Set(ours.keys).count == 25)
        #expect(text.contains("\n  \"probation\" : null,\n"))
        #expect(text.contains("\n  \"hooks\" : null,\n"))
    }

    @Test func historyEntriesAreAnArray() throws {
        let entries = [HistoryEntry(time: "2026-01-01T00:00:00Z", kind: "switch", from: "current", to: "previous", source: "cli", reason: nil)]
        let text = JSONWriter.render(entries)
        #expect(text == "[\n  {\n    \"from\" : \"current\",\n    \"kind\" : \"switch\",\n    \"reason\" : null,\n    \"source\" : \"cli\",\n    \"time\" : \"2026-01-01T00:00:00Z\",\n    \"to\" : \"previous\"\n  }\n]")
        #expect(try JSONDecoder().decode([HistoryEntry].self, from: Data(text.utf8)) == entries)
        #expect(JSONWriter.render([HistoryEntry]()) == "[]")
    }
}
