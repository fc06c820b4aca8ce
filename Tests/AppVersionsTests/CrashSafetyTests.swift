import AppVersions
import Foundation
import Testing

/// Runs the `appversions-fixture` executable, found next to the test bundle in the
/// build products directory (`swift build` and `swift test` build it there), or at
/// `$APPVERSIONS_FIXTURE`.
enum Fixture {
    static let path: String? = {
        if let override = ProcessInfo.processInfo.environment["APPVERSIONS_FIXTURE"] { return override }
        var candidates: [String] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: executable).deletingLastPathComponent().path)
        }
        candidates.append(Bundle.main.bundleURL.path)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().path)
        for directory in candidates {
            let path = directory + "/appversions-fixture"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()

    static func locate() throws -> String {
        try #require(Fixture.path, "appversions-fixture was not found next to the test bundle; run `swift build` first or set APPVERSIONS_FIXTURE")
    }

    struct Result {
        let status: Int32
        let reason: Process.TerminationReason
        let stdout: String
        let stderr: String
    }

    /// Starts the fixture with its output going to files in `directory`.
    static func start(_ arguments: [String], outputIn directory: TemporaryDirectory, tag: String = "out") throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try locate())
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        _ = FileManager.default.createFile(atPath: directory.file("\(tag).stdout"), contents: nil)
        _ = FileManager.default.createFile(atPath: directory.file("\(tag).stderr"), contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.file("\(tag).stdout")))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.file("\(tag).stderr")))
        try process.run()
        return process
    }

    static func finish(_ process: Process, outputIn directory: TemporaryDirectory, tag: String = "out") -> Result {
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            reason: process.terminationReason,
            stdout: (try? String(contentsOfFile: directory.file("\(tag).stdout"), encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: directory.file("\(tag).stderr"), encoding: .utf8)) ?? ""
        )
    }

    static func run(_ arguments: [String], outputIn directory: TemporaryDirectory, tag: String = "out") throws -> Result {
        finish(try start(arguments, outputIn: directory, tag: tag), outputIn: directory, tag: tag)
    }

    /// Waits until `path` exists, for at most `seconds`.
    static func waitFor(_ path: String, seconds: Double = 60) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if FileManager.default.fileExists(atPath: path) { return true }
            usleep(5_000)
        }
        return false
    }
}

@Suite("Crash safety (real processes, real SIGKILL)")
final class CrashSafetyTests {
    let directory = TemporaryDirectory()

    deinit { directory.remove() }

    var ledgers: String { directory.file("ledgers") }

    @Test func aStepKilledMidwayIsReportedAndRunsAgainAtTheNextStart() throws {
        let marker = directory.file("slow-started")
        let child = try Fixture.start(["migrate", ledgers, "1.1.0", "--sleep", "30", "--marker", marker], outputIn: directory, tag: "first")
        #expect(Fixture.waitFor(marker), "the fixture never reached the slow step")
        kill(child.processIdentifier, SIGKILL)
        let killed = Fixture.finish(child, outputIn: directory, tag: "first")
        #expect(killed.reason == .uncaughtSignal && killed.status == SIGKILL)
        #expect(killed.stdout == "began a\nbegan slow\n")

        // The ledger the killed process left is intact and says where it stopped.
        let store = FileLedgerStore(directory: ledgers)
        var migrator = Migrator(store: store)
        migrator.baseline = { _ in .zero }
        for name in ["a", "slow", "c"] {
            migrator.register(name, at: name == "a" ? "1.0.0" : "1.1.0") { _ in }
        }
        let plan = try migrator.plan(for: RunningVersion(version: "1.1.0", build: "fixture"))
        #expect(plan.interrupted.map(\.name) == ["slow"])
        #expect(plan.steps == ["slow", "c"])

        // The next start (a new process) reports it, retries it, and finishes the rest.
        let next = try Fixture.run(["migrate", ledgers, "1.1.0"], outputIn: directory, tag: "second")
        #expect(next.status == 0 && next.reason == .exit, "\(next.stderr)")
        #expect(next.stdout == "began slow\nbegan c\nran=slow,c interrupted=slow retried=slow\n")
        #expect(try migrator.plan(for: RunningVersion(version: "1.1.0", build: "fixture")).isUpToDate)
    }

    @Test func aKilledWriterNeverLeavesAHalfWrittenLedger() throws {
        var generator = SeededGenerator(seed: UInt64(getpid()))
        var lastCount = 0
        for round in 0..<6 {
            let marker = directory.file("churn-\(round)")
            let child = try Fixture.start(["churn", ledgers, "--marker", marker], outputIn: directory, tag: "churn-\(round)")
            #expect(Fixture.waitFor(marker), "the fixture never wrote")
            usleep(UInt32.random(in: 1_000...60_000, using: &generator))
            kill(child.processIdentifier, SIGKILL)
            let result = Fixture.finish(child, outputIn: directory, tag: "churn-\(round)")
            #expect(result.reason == .uncaughtSignal, "round \(round): \(result.stderr)")

            // Whatever moment the kill hit, a fresh reader sees a whole ledger that only grew.
            let history = try VersionTracker(store: FileLedgerStore(directory: ledgers), osReleasePath: nil).history()
            #expect(history.events.count > lastCount, "round \(round)")
            lastCount = history.events.count
        }
    }

    @Test func twoProcessesStartingTogetherRunAStepOnce() throws {
        let first = try Fixture.start(["migrate", ledgers, "1.1.0", "--sleep", "0.5"], outputIn: directory, tag: "p1")
        let second = try Fixture.start(["migrate", ledgers, "1.1.0", "--sleep", "0.5"], outputIn: directory, tag: "p2")
        let results = [Fixture.finish(first, outputIn: directory, tag: "p1"), Fixture.finish(second, outputIn: directory, tag: "p2")]
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let output = results.map(\.stdout).joined()
        #expect(output.components(separatedBy: "began slow").count - 1 == 1, "\(output)")
        #expect(output.contains("ran=a,slow,c"))
        #expect(output.contains("ran= interrupted= retried="))
    }

    @Test func registeringANameTwiceTrapsAndNamesIt() throws {
        let result = try Fixture.run(["duplicate"], outputIn: directory)
        #expect(result.reason == .uncaughtSignal)
        #expect(result.stderr.contains("Migration step \"twice\" is registered twice; give every step a unique name."), "\(result.stderr)")
        #expect(!result.stdout.contains("without trapping"))
    }
}
