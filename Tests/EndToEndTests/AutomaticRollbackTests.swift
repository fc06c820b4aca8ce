import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Boot counting through the real binaries: a build that keeps failing to start before it
/// marks itself good is marked bad, and the other slot runs.
@Suite struct AutomaticRollbackTests {
    enum Failure: String, CaseIterable {
        case fatalError, segv, abort, exit1, sigkillFromOutside

        /// Starts the current slot once and makes it fail this way.
        func start(_ t: TestBundle) throws {
            switch self {
            case .fatalError: #expect(try t.launcher("crash").signaled)
            case .segv: #expect(try t.launcher("crash", "segv").signaled)
            case .abort: #expect(try t.launcher("crash", "abort").signaled)
            case .exit1: #expect(try t.launcher("exit", "1").status == 1)
            case .sigkillFromOutside:
                let process = Process()
                process.executableURL = URL(fileURLWithPath: t.bundle + "/bin/launcher")
                process.arguments = ["hang"]
                process.environment = ["SWITCHBACK_STATE_DIR": t.state]
                let waitForExit = try process.start()
                // Wait until the start has used its try, then kill it from outside.
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline, !((try? String(contentsOfFile: t.state + "/health", encoding: .utf8))?.contains("changed_at") ?? false) {
                    usleep(10_000)
                }
                usleep(50_000)
                kill(process.processIdentifier, SIGKILL)
                waitForExit()
                #expect(process.terminationReason == .uncaughtSignal)
            }
        }
    }

    @Test func threeCrashingStartsMakeTheNextStartRunThePrevious() throws {
        let t = try TestBundle()
        for expected in [2, 1, 0] {
            try Failure.fatalError.start(t)
            #expect(try t.health("current").triesLeft == expected)
        }
        let status = try t.status()
        #expect(status.activeSlot == "previous")
        #expect(status.explanation == "The next start runs the previous slot (\(t.previousVersion)) because the current build failed 3 starts without being marked good.")

        let fourth = try t.launcher()
        #expect(fourth.status == 0)
        #expect(fourth.stdout.hasPrefix(t.greeting(.previous)))
        #expect(fourth.stderr == "launcher: The current build (\(t.currentVersion)) failed 3 starts without being marked good; running the previous slot (\(t.previousVersion)) instead.\n")

        let after = try t.status()
        #expect(after.rollback == true)
        #expect(after.source == "auto")
        #expect(after.reason == "the current build (\(t.currentVersion)) failed 3 starts without being marked good")
        #expect(try t.health("current").verdict == "bad")
        #expect(try t.health("current").note == "3 starts without a good mark")
        let event = try #require(try t.history().last)
        #expect(event.source == "auto")
        #expect(event.from == "current" && event.to == "previous")
        #expect(try t.launcher().stderr.isEmpty, "later starts run the previous slot quietly")
        #expect(try t.rollbackctl("status").stdout.contains("current   \(t.currentVersion) build "))
    }

    @Test(arguments: Failure.allCases)
    func everyKindOfFailedStartCounts(failure: Failure) throws {
        let t = try TestBundle()
        for _ in 0..<3 { try failure.start(t) }
        let next = try t.launcher()
        #expect(next.stdout.hasPrefix(t.greeting(.previous)))
        #expect(next.stderr.contains("failed 3 starts without being marked good"))
        #expect(try t.status().source == "auto")
    }

    @Test func aStartMarkedGoodStopsTheCounting() throws {
        let t = try TestBundle()
        try Failure.exit1.start(t)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))  // marks itself good
        #expect(try t.health("current").verdict == "good")
        for _ in 0..<4 { try Failure.exit1.start(t) }
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
        #expect(try t.health("current").verdict == "good")
        #expect(try t.health("current").failedStarts == 0)
    }

    @Test func exitCodeZeroMarksGoodUnlessTheManifestSaysOtherwise() throws {
        let t = try TestBundle()
        #expect(try t.launcher("exit", "0").status == 0)
        #expect(try t.health("current").verdict == "good")

        let strict = try TestBundle()
        try strict.setManifestSetting("trial.good_on_exit_zero", "false")
        for _ in 0..<3 { #expect(try strict.launcher("exit", "0").status == 0) }
        #expect(try strict.launcher("version").stdout == strict.previousVersion + "\n")
    }

    @Test func rollforwardPutsTheBuildBackOnTrialWithFreshTries() throws {
        let t = try TestBundle()
        for _ in 0..<3 { try Failure.exit1.start(t) }
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        let forward = try t.rollbackctl("rollforward", "--reason", "fixed the config")
        #expect(forward.status == 0)
        #expect(forward.stdout == """
            Rolled forward: the next start runs the current slot (\(t.currentVersion)).
            The current build (\(t.currentVersion)) was bad (3 starts without a good mark); it is back on trial with 3 tries.

            """)
        #expect(try t.health("current").triesLeft == 3)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
    }

    @Test func twoLaunchersAtTheSameMomentNeverCorruptTheCounter() throws {
        let t = try TestBundle()
        try t.setManifestSetting("trial.tries", "40")
        for _ in 0..<3 {
            var processes: [Process] = []
            for _ in 0..<10 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: t.bundle + "/bin/launcher")
                process.arguments = ["exit", "1"]
                process.environment = ["SWITCHBACK_STATE_DIR": t.state]
                processes.append(process)
            }
            let waits = try processes.map { try $0.start() }
            for wait in waits { wait() }
        }
        let health = try t.health("current")
        #expect(health.triesLeft == 10)
        #expect(health.failedStarts == 30)
    }

    @Test func markBadMovesTheFlagAndMarkGoodStopsCounting() throws {
        let t = try TestBundle()
        let bad = try t.rollbackctl("mark-bad")
        #expect(bad.status == 0)
        #expect(bad.stdout == "Marked the current build (\(t.currentVersion)) bad.\nThe next start runs the previous slot (\(t.previousVersion)).\n")
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        #expect(try t.status().source == "cli")

        let good = try t.rollbackctl("mark-good", "current")
        #expect(good.stdout == "Marked the current build (\(t.currentVersion)) good: its starts are no longer counted.\n")
        #expect(try t.health("current").verdict == "good")

        let wrong = try t.rollbackctl("mark-good", "newest")
        #expect(wrong.status == 64)
        #expect(wrong.stderr.hasPrefix("Error: SLOT must be 'current' or 'previous', not 'newest'.\n"))
    }

    @Test func bothBadRunsTheOneThatLastStartedWellAndSaysHowToRecover() throws {
        let t = try TestBundle()
        #expect(try t.launcher(environment: ["SWITCHBACK_SLOT": "previous"]).status == 0)
        // The previous build went bad by itself (automatic verdict) after it last started well.
        let now = Int(Date().timeIntervalSince1970)
        let health = "format=2\nbuild=\(try t.manifestValue("previous.sha256"))\nversion=\(t.previousVersion)\nverdict=bad\nmarked_by=auto\nfailed_starts=3\nlast_good_at=\(now - 100)\nchanged_at=\(now)\nnote=3 starts without a good mark\nend=ok\n"
        try health.write(toFile: t.state + "/health", atomically: true, encoding: .utf8)
        for _ in 0..<3 { try Failure.exit1.start(t) }
        let result = try t.launcher()
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix(t.greeting(.previous)))
        #expect(result.stderr.hasPrefix("launcher: WARNING: both builds are bad (the current build (\(t.currentVersion)) failed 3 starts without being marked good; the previous build (\(t.previousVersion)) is marked bad). Running the previous slot because it last started well on "))
        #expect(result.stderr.contains("'rollbackctl rollforward'"))
    }

    @Test func aBuildAnOperatorMarkedBadIsNeverTheAutomaticTarget() throws {
        let t = try TestBundle()
        #expect(try t.launcher(environment: ["SWITCHBACK_SLOT": "previous"]).status == 0)
        #expect(try t.rollbackctl("mark-good", "previous").status == 0)
        #expect(try t.rollbackctl("mark-bad", "previous").status == 0)
        for _ in 0..<3 { try Failure.exit1.start(t) }
        let result = try t.launcher()
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix(t.greeting(.current)))
        #expect(result.stderr == "launcher: WARNING: the current build (\(t.currentVersion)) failed 3 starts without being marked good, but automatic rollback will not switch to the previous build (\(t.previousVersion)), which was rejected: marked bad with rollbackctl. Running the current slot anyway. Fix the current build, or run 'rollbackctl rollback' to run \(t.previousVersion) again.\n")
        // Every later start and status say so too.
        #expect(try t.status().warning?.contains("but automatic rollback will not switch to the previous build (\(t.previousVersion))") == true)
        #expect(try t.launcher().stderr.contains("WARNING: the current build (\(t.currentVersion)) is marked bad (3 starts without a good mark), but automatic rollback will not switch"))
    }
}
