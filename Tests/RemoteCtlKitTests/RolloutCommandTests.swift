import Foundation
@testable import RemoteCtlKit
@testable import RollbackCtlKit
import SwitchbackCrypto
import Testing

/// `rollbackctl-remote rollout` through its command line (RemoteCtl.main, no process): usage
/// errors (64), bad plans (78), the wait for an operator (3, on stdout), a real run against
/// files in a private directory, and the dry run that writes nothing.
@Suite struct RolloutCommandTests {
    final class Captured: @unchecked Sendable {
        var out: [String] = []
        var error: [String] = []
    }

    /// A private directory with a key and a plan (`plan` lines).
    struct Workspace {
        let directory: String
        var key: String { directory + "/directive.key" }
        var planFile: String { directory + "/plan" }
        var out: String { directory + "/www/directive.json" }
        var state: String { directory + "/rollout.state" }

        init(plan: String) throws {
            var template = Array((NSTemporaryDirectory() + "/switchback-test-XXXXXX").utf8CString)
            directory = String(cString: try #require(mkdtemp(&template)))
            try FileManager.default.createDirectory(atPath: directory + "/www", withIntermediateDirectories: false)
            try (try Ed25519PrivateKey.generate().pemRepresentation()).write(toFile: key, atomically: true, encoding: .utf8)
            chmod(key, 0o600)
            try plan.write(toFile: planFile, atomically: true, encoding: .utf8)
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }

        func run(_ extra: [String] = [], plan: String? = nil) -> (status: Int32, out: [String], error: [String]) {
            let arguments = ["rollout", "--plan", plan ?? planFile, "--key", key, "--out", out, "--state", state] + extra
            return RolloutCommandTests.run(arguments)
        }
    }

    static func run(_ arguments: [String]) -> (status: Int32, out: [String], error: [String]) {
        let captured = Captured()
        let console = Console(writeOut: { captured.out.append($0) }, writeError: { captured.error.append($0) })
        let status = RemoteCtl.main(arguments, console: console)
        return (status, captured.out, captured.error)
    }

    static let goodPlan = """
        rollout.version=1.3.0
        rollout.steps=5,100
        rollout.pause_s=0
        rollout.approval=100
        rollout.app_id=dev.example

        """

    @Test(arguments: [
        (["rollout", "--key", "k", "--out", "o", "--state", "s"], "Error: Missing '--plan FILE'."),
        (["rollout", "--plan", "p", "--out", "o", "--state", "s"], "Error: Missing '--key FILE'."),
        (["rollout", "--plan", "p", "--key", "k", "--state", "s"], "Error: Missing '--out FILE' (the directive file the installs fetch)."),
        (["rollout", "--plan", "p", "--key", "k", "--out", "o"], "Error: Missing '--state FILE' (where the rollout keeps its progress)."),
        (["rollout", "--plan", "p", "--key", "k", "--out", "o", "--state", "s", "--approve", "--abort"], "Error: Give '--approve' or '--abort', not both."),
        (["rollout", "--plan", "p", "--key", "k", "--out", "o", "--state", "o"], "Error: '--out' and '--state' must be two files, not both o."),
        (["rollout", "--plan", "p", "--key", "k", "--out", "-", "--state", "s"], "Error: '--out' must name a file: the rollout replaces it at every step."),
        (["rollout", "--plan", "p", "--steps", "5"], "Error: Unknown option '--steps'."),
    ])
    func usageErrorsExit64WithTheUsageLine(arguments: [String], message: String) {
        let result = Self.run(arguments)
        #expect(result.status == 64)
        #expect(result.out.isEmpty)
        #expect(result.error == [message, "Usage: rollbackctl rollout --plan FILE --key FILE ... --out FILE --state FILE [--dry-run] [--approve] [--promote-full] [--abort]",
                                 "  See 'rollbackctl rollout --help' for help."])
    }

    @Test func badPlansExit78WithOneSentence() throws {
        let w = try Workspace(plan: "rollout.version=1.3.0\nrollout.steps=5,1\n")
        defer { w.remove() }
        let bad = w.run()
        #expect(bad.status == 78)
        #expect(bad.error == ["Error: The rollout plan \(w.planFile) has rollout.steps=5,1: the percentages must go up, and 1 comes after 5."])
        let missing = w.run(plan: w.directory + "/nothing")
        #expect(missing.status == 78)
        #expect(missing.error == ["Error: The rollout plan \(w.directory)/nothing does not exist; write one with rollout.version, rollout.steps and rollout.pause_s (docs/rollout.md)."])
        try "rollout.version=1.3.0\nno equals sign\n".write(toFile: w.planFile, atomically: true, encoding: .utf8)
        let malformed = w.run()
        #expect(malformed.status == 78)
        #expect(malformed.error == ["Error: The rollout plan \(w.planFile) has a malformed line 2; fix that line."])
        // Nothing was published or recorded.
        #expect(!FileManager.default.fileExists(atPath: w.out) && !FileManager.default.fileExists(atPath: w.state))
    }

    @Test func aRunPublishesWaitsForApprovalOnStdoutAndCompletesWhenApproved() throws {
        let w = try Workspace(plan: Self.goodPlan)
        defer { w.remove() }
        let first = w.run()
        #expect(first.status == 3, "\(first)")
        #expect(first.error.isEmpty)
        #expect(first.out.first == "Rollout of 1.3.0 for dev.example: steps 5%, 100% (approval); a 0 s pause after each, with no checks (analysis.checks is empty); directives to \(w.out).")
        #expect(first.out.last == "Waiting for approval: step 2 of 2 (100%) is published only once an operator approves it; run the same command with --approve to publish it, or with --abort to roll back.")
        let state = try String(contentsOfFile: w.state, encoding: .utf8)
        #expect(state.contains("\nphase=awaiting_approval\n"))
        let mode = try FileManager.default.attributesOfItem(atPath: w.state)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let approved = w.run(["--approve"])
        #expect(approved.status == 0, "\(approved)")
        #expect(approved.out.last?.hasPrefix("The rollout of 1.3.0 is complete: its last directive (serial ") == true)
        #expect(approved.out.last?.hasSuffix(" was published for every install (100%); its last pause measured: passed: no checks configured (analysis.checks), paused 0 s.") == true, "\(approved.out)")
        #expect(try String(contentsOfFile: w.out, encoding: .utf8).contains("\"payload\""))
    }

    /// A plan's hooks get each step, in order: published, judged, the wait for approval; then,
    /// approved, the last step and the end. A hook that fails is said, and the rollout goes on.
    @Test func thePlansHooksGetEveryStepInOrder() throws {
        let w = try Workspace(plan: Self.goodPlan)
        defer { w.remove() }
        let script = w.directory + "/hook.sh"
        try "#!/bin/sh\ncat >> '\(w.directory)/hook.out'\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        try (Self.goodPlan + "hooks.command=\(script)\n").write(toFile: w.planFile, atomically: true, encoding: .utf8)
        #expect(w.run().status == 3)
        #expect(w.run(["--approve"]).status == 0)
        let events = try String(contentsOfFile: w.directory + "/hook.out", encoding: .utf8).split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        #expect(events.map { "\($0["kind"]!) \($0["step"]!) \($0["percent"]!)" } == [
            "rollout_step_published 1 5", "rollout_step_judged 1 5", "rollout_waiting 2 100",
            "rollout_step_published 2 100", "rollout_step_judged 2 100", "rollout_completed 2 100",
        ])
        #expect(events[1]["result"] as? String == "passed: no checks configured (analysis.checks), paused 0 s")
        #expect(events.allSatisfy { $0["version"] as? String == "1.3.0" && $0["app_id"] as? String == "dev.example" && ($0["id"] as? String)?.count == 32 })

        // A hook that fails: said once per event, and the rollout completes all the same.
        let failing = try Workspace(plan: Self.goodPlan.replacingOccurrences(of: "rollout.approval=100\n", with: "") + "hooks.command=/nonexistent/hook\nhooks.retries=0\n")
        defer { failing.remove() }
        let result = failing.run()
        #expect(result.status == 0, "\(result)")
        #expect(result.out.filter { $0.hasPrefix("Hooks: the rollout_") }.count == 5, "\(result.out)")
        #expect(result.out.contains { $0.hasPrefix("Hooks: the rollout_completed event ") && $0.hasSuffix(" was not delivered after 1 try: The hook command /nonexistent/hook is missing; fix it or hooks.command.") }, "\(result.out)")
    }

    /// `rollout-status` on the files a real run left: where it waits, and that no process runs it.
    @Test func rolloutStatusSaysWhereARolloutIs() throws {
        let w = try Workspace(plan: Self.goodPlan)
        defer { w.remove() }
        let missing = Self.run(["rollout-status", "--state", w.state])
        #expect(missing.status == 1)
        #expect(missing.error == ["Error: There is no rollout state file \(w.state); a rollout writes it at its first run (rollbackctl-remote rollout --state \(w.state))."], "\(missing)")
        #expect(w.run().status == 3)
        let status = Self.run(["rollout-status", "--state", w.state])
        #expect(status.status == 0, "\(status)")
        #expect(status.out.first == "Rollout of 1.3.0: step 2 of 2 (100%) waits for approval: run the rollout again with --approve to publish it, or with --abort to roll back.", "\(status.out)")
        #expect(status.out.contains { $0.hasPrefix("Step 1 of 2 (5%): serial ") && $0.hasSuffix(": passed: no checks configured (analysis.checks), paused 0 s.") }, "\(status.out)")
        #expect(status.out.last == "No rollout process runs: run the same rollout command to go on.")
        // A killed rollout's pid text left in the lock file says nothing: the kernel's flock does.
        try "\(getpid())\n".write(toFile: w.state + ".lock", atomically: false, encoding: .utf8)
        #expect(Self.run(["rollout-status", "--state", w.state]).out.last == "No rollout process runs: run the same rollout command to go on.")
        let fd = open(w.state + ".lock", O_RDWR)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        #expect(Self.run(["rollout-status", "--state", w.state]).out.last == "A rollout process (pid \(getpid())) holds the state file.")
        let usage = Self.run(["rollout-status"])
        #expect(usage.status == 64 && usage.error.first == "Error: Missing '--state FILE' (the rollout's state file).", "\(usage)")
    }

    @Test func aDryRunPrintsEveryDirectiveAndWritesNothing() throws {
        let w = try Workspace(plan: Self.goodPlan)
        defer { w.remove() }
        let result = w.run(["--dry-run"])
        #expect(result.status == 0, "\(result)")
        #expect(result.out.allSatisfy { $0.hasPrefix("[dry run] ") })
        let json = result.out.filter { $0.hasPrefix("[dry run]     {") }
        try #require(json.count == 3, "two steps and the rollback: \(result.out)")
        #expect(json[0].contains("\"decision\":\"run_current\"") && json[0].contains("\"rollout_percent\":5"))
        #expect(json[1].contains("\"decision\":\"run_current\"") && json[1].contains("\"rollout_percent\":100"))
        #expect(json[2].contains("\"decision\":\"run_previous\"") && json[2].contains("\"rollout_percent\":100"))
        #expect(result.out.contains("[dry run] (assuming the operator runs it again with --approve)"))
        #expect(result.out.last == "[dry run] Nothing was written: \(w.out) and \(w.state) are as they were.")
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.directory + "/www").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: w.state))
    }

    @Test func theHelpIsGeneratedFromTheTable() {
        let help = Self.run(["rollout", "--help"])
        #expect(help.status == 0)
        #expect(help.out.first?.contains("USAGE: rollbackctl rollout --plan FILE --key FILE ... --out FILE --state FILE [--dry-run] [--approve] [--promote-full] [--abort]") == true)
        #expect(help.out.first?.hasSuffix("78 a bad plan.") == true)
        #expect(Help.tool(CommandTable.all).contains("\n  rollout             Carry a release through a fleet in steps, judged by Prometheus."))
        #expect(CommandError(.waiting, "x").exitCode == 3)
        #expect(CommandError(.configInvalid, "x").exitCode == 78)
    }
}
