import Foundation
import Testing
@testable import SwitchbackCore

/// The caller's side of a planning run: its answer parsed, and every way a run can go wrong
/// (garbage, a hang past the deadline, a crash, a flood, a failure) turned into `.failure`
/// with one sentence, never a crash or a hang of the caller. The misbehaving runs are real
/// processes (/bin/sh scripts) read by the same code that reads the launcher's planning run;
/// EndToEndTests/PendingStepsTests runs the real launcher and slots.
@Suite struct PendingStepsTests {
    static let build = "the current build (1.2.0)"
    static let path = "/bundle/bin/launcher"

    /// Runs `script` under /bin/sh as the planning child, then interprets it as the query does.
    func plan(_ script: String, deadlineMilliseconds: Int = 10_000, outputLimit: Int = PendingSteps.outputLimit)
        throws -> Result<[PendingStep]?, SwitchbackError> {
        let shell = try ProgramFile.open("/bin/sh", what: "shell")
        let run = ChildRun.run(shell, arguments: ["sh", "-c", script], environment: ["PATH=/usr/bin:/bin"],
                               deadlineMilliseconds: deadlineMilliseconds, outputLimit: outputLimit)
        return PendingSteps.interpret(run, build: Self.build, path: Self.path, deadlineMilliseconds: deadlineMilliseconds)
    }

    func failure(_ result: Result<[PendingStep]?, SwitchbackError>) -> SwitchbackError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    /// A planning run or a conversion dies with its parent (`ParentDeath`): it is told who
    /// that is (the launcher it runs checks it against `getppid()` after `prctl`); an
    /// inherited value is replaced, never kept.
    @Test func aChildIsToldItsParentToDieWith() throws {
        let shell = try ProgramFile.open("/bin/sh", what: "shell")
        let run = ChildRun.run(shell, arguments: ["sh", "-c", "echo $SWITCHBACK_PARENT_PID; echo $PPID"],
                               environment: ["PATH=/usr/bin:/bin", "SWITCHBACK_PARENT_PID=1"],
                               deadlineMilliseconds: 10_000, outputLimit: 1024)
        #expect(String(decoding: run.output, as: UTF8.self) == "\(getpid())\n\(getpid())\n")
        #expect(run.ending == .exited(0))
    }

    // MARK: - Answers

    @Test func stepsThenDoneAreTheStepsInOrder() throws {
        let result = try plan(#"printf 'step create-notes-store - 1.2.0\nstep notes-v2 1.2.0 1.2.0\nstep clear-caches - -\ndone\n'"#)
        #expect(try result.get() == [
            PendingStep(name: "create-notes-store", version: "", readerFloor: "1.2.0"),
            PendingStep(name: "notes-v2", version: "1.2.0", readerFloor: "1.2.0"),
            PendingStep(name: "clear-caches", version: "", readerFloor: ""),
        ])
    }

    @Test func doneAloneIsNothingToRunAndUnknownIsABuildThatCannotSay() throws {
        #expect(try plan("echo done").get() == [])
        #expect(try plan("echo unknown").get() == nil)
    }

    @Test func fieldsArePercentDecoded() throws {
        let output = Array("step notes%20v2%25%0A%2D 2.0.0-rc.1 %2D\nstep %C3%BCn%C3%AF - -\ndone\n".utf8)
        #expect(try PendingSteps.parse(output).get() == [
            PendingStep(name: "notes v2%\n-", version: "2.0.0-rc.1", readerFloor: "-"),
            PendingStep(name: "ünï", version: "", readerFloor: ""),
        ])
    }

    @Test(arguments: [
        ("step notes-v2 1.2.0\ndone\n", "printed 'step notes-v2 1.2.0', which is not a step"),
        ("step a b c d\ndone\n", "printed 'step a b c d', which is not a step"),
        ("step bad%2 1.2.0 1.2.0\ndone\n", "printed 'step bad%2 1.2.0 1.2.0', which is not a step"),
        ("step %FF 1.2.0 1.2.0\ndone\n", "printed 'step %FF 1.2.0 1.2.0', which is not a step"),
        ("step - 1.2.0 1.2.0\ndone\n", "printed 'step - 1.2.0 1.2.0', which is not a step"),
        ("step  1.2.0 1.2.0\ndone\n", "printed 'step  1.2.0 1.2.0', which is not a step"),
        ("step notes-v2 1.2.0 1.2.0\n", "did not end its answer with 'done'"),
        ("unknown\ndone\n", "printed 'unknown', which is not a step"),
        ("done\ndone\n", "printed 'done', which is not a step"),
        ("done", "stopped in the middle of a line"),
        ("", "exited without printing anything"),
    ])
    func anAnswerThatIsNotAPlanSaysWhatItPrinted(output: String, clause: String) {
        #expect(PendingSteps.parse(Array(output.utf8)) == .failure(PendingSteps.PlanProblem(clause)))
    }

    // MARK: - Runs that go wrong

    @Test func garbageIsAFailureQuotingIt() throws {
        let error = try #require(failure(try plan(#"printf 'Starting the notes app\001\ndone\n'"#)))
        #expect(error.code == .planningFailed)
        #expect(error.message == "The planning run of the current build (1.2.0) printed 'Starting the notes app?', which is not a step; until it answers, a switch to it stops the serving build first.")
        let noDone = try #require(failure(try plan("echo hello")))
        #expect(noDone.message == "The planning run of the current build (1.2.0) did not end its answer with 'done'; until it answers, a switch to it stops the serving build first.")
    }

    @Test func aRunThatHangsPastTheDeadlineIsKilled() throws {
        let started = Date()
        let error = try #require(failure(try plan("echo 'step notes-v2 1.2.0 1.2.0'; sleep 20", deadlineMilliseconds: 300)))
        #expect(error.code == .planningFailed)
        #expect(error.message == "The planning run of the current build (1.2.0) did not answer within 300 ms and was killed: check what the app's migrations(_:launch:) and its baseline do before a step runs; until it answers, a switch to it stops the serving build first.")
        #expect(Date().timeIntervalSince(started) < 30, "the caller waited for the child, not the deadline")
        // Closing its output does not end the wait either: the exit is awaited, bounded.
        #expect(failure(try plan("echo done; exec >&-; sleep 20", deadlineMilliseconds: 300))?.message.contains("did not answer within 300 ms") == true)
    }

    @Test func aRunThatCrashesIsAFailureNamingTheSignal() throws {
        let error = try #require(failure(try plan("echo 'step notes-v2 1.2.0 1.2.0'; kill -11 $$")))
        #expect(error.message == "The planning run of the current build (1.2.0) was killed by signal 11 (Segmentation fault); until it answers, a switch to it stops the serving build first.")
    }

    @Test func aFailedRunSaysItsMessageOrItsExitCode() throws {
        let said = try #require(failure(try plan("echo 'message=the ledger is damaged.'; exit 70")))
        #expect(said.message == "The planning run of the current build (1.2.0) failed: the ledger is damaged; until it answers, a switch to it stops the serving build first.")
        let silent = try #require(failure(try plan("echo done; exit 3")))
        #expect(silent.message == "The planning run of the current build (1.2.0) exited with code 3 without saying why; until it answers, a switch to it stops the serving build first.")
    }

    @Test func aFloodIsCutAtTheLimitAndKilled() throws {
        let error = try #require(failure(try plan("yes 'step notes-v2 1.2.0 1.2.0'", outputLimit: 1 << 20)))
        #expect(error.message == "The planning run of the current build (1.2.0) printed more than 1 MiB and was killed; until it answers, a switch to it stops the serving build first.")
    }

    @Test func aBundleWithoutALauncherOrWithOneThatSaysNothingCannotBeAsked() throws {
        let root = NSTemporaryDirectory() + "switchback-plan-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/bin", withIntermediateDirectories: true)
        let slot = { (version: String) in Manifest.SlotRecord(version: version, build: "b", abiStamp: "a", size: 1, sha256: "s") }
        let manifest = Manifest(appID: "id", current: slot("1.2.0"), previous: slot("1.1.0"))
        let directory = StateDirectory(path: root + "/state")

        let missing = try #require(failure(PendingSteps.query(bundleRoot: root, manifest: manifest, directory: directory, slot: .previous)))
        #expect(missing.code == .planningFailed)
        #expect(missing.message == "Cannot ask the previous build (1.1.0) which data steps it runs at its start: The launcher program \(root)/bin/launcher is missing; rebuild the bundle with scripts/bundle.")

        // A launcher that is some other program: it reads its empty stdin and exits 0.
        let shell = URL(fileURLWithPath: "/bin/sh").resolvingSymlinksInPath().path   // a copy of the link would be a link
        try FileManager.default.copyItem(atPath: shell, toPath: root + "/bin/launcher")
        let other = try #require(failure(PendingSteps.query(bundleRoot: root, manifest: manifest, directory: directory, slot: .current)))
        #expect(other.message == "The planning run of the current build (1.2.0) exited without printing anything; until it answers, a switch to it stops the serving build first.")
    }

    @Test func theChildPlansOnlyAndTalksToNoServiceManager() {
        let inherited = ["PATH=/bin", "NOTIFY_SOCKET=/run/test-notify", "SWITCHBACK_DOWNGRADE=run", "SWITCHBACK_STATE_DIR=/elsewhere",
                         "SWITCHBACK_SUPERVISOR_PID=1", "LISTEN_FDS=2", "SWITCHBACK_SLOT=previous", "SWITCHBACK_DATA_DIR=/srv/notes", "A=b=c"]
        let environment = PendingSteps.childEnvironment(slot: .current, directory: StateDirectory(path: "/var/lib/notes"), inherited: inherited)
        #expect(environment == ["PATH=/bin", "SWITCHBACK_DATA_DIR=/srv/notes", "A=b=c",
                                "SWITCHBACK_PLAN_STEPS=current", "SWITCHBACK_STATE_DIR=/var/lib/notes"])
        #expect(LaunchRole.decide { ["SWITCHBACK_PLAN_STEPS": "current"][$0] } == .planSteps(slot: "current"))
    }
}
