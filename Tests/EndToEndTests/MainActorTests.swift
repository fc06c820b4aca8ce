import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// An app whose async `main` uses the main actor, bundled from outside and run through the
/// real launcher (Tests/Fixtures/MainActorApp, bundled once per run by scripts/bundle, the
/// command `swift run switchback-bundle` runs):
///
/// - `main` awaits a `@MainActor` function and a `MainActor.run` block: both run, on the
///   process's main thread (its thread id is its process id), as `main` itself does, and the
///   launcher exits with `main`'s code (42);
/// - a main-actor task still sleeping when `main` returns is not waited for: the launcher
///   exits at once with `main`'s code (7), as a program with Swift's own async `main` does;
/// - SIGTERM, taken by a dispatch source on the main queue, reaches the app, on the main
///   thread, and `main` returns its code (3).
///
/// Everything it builds stays in a temporary directory (the app's `.build-switchback`) or in
/// this checkout's `.build-tools`, `.build-launcher` and `.build-bundler`, which scripts/test
/// builds first.
@Suite(.serialized) struct MainActorTests {
    @Test func anAsyncMainRunsOnTheMainActorOnTheMainThreadAndItsCodeIsTheExitCode() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = Date()
        let dist = try MainActorApp.bundle(in: directory)
        print("MainActorTests: bundling the app took \(Int(Date().timeIntervalSince(started))) s")

        let check = try MainActorApp.launch(dist, state: directory + "/state-check", "check")
        #expect(check.status == 42 && !check.signaled, "the launcher exits with main's code: \(check)")
        #expect(check.stdout == """
            main: on the main thread: true
            @MainActor function: on the main thread: true
            MainActor.run: on the main thread: true

            """, "\(check)")
        #expect(check.stderr == "", "\(check)")

        let clock = ContinuousClock()
        let began = clock.now
        let pending = try MainActorApp.launch(dist, state: directory + "/state-pending", "pending")
        let took = clock.now - began
        #expect(pending.status == 7 && !pending.signaled, "the launcher exits with main's code: \(pending)")
        #expect(pending.stdout == "pending task: started\nmain: returning 7\n", "the task started, and was not waited for: \(pending)")
        // The task sleeps 60 s; waiting for it would take that long.
        #expect(took < .seconds(30), "the launcher exited after \(took)")

        // A signal still reaches the app: SIGTERM, taken by a dispatch source on the main queue
        // (the queue the launcher's thread drains), ends main with its code.
        let log = directory + "/signal.log"
        let server = try SpawnedProcess(dist + "/bin/launcher", ["signal"], environment: MainActorApp.environment(state: directory + "/state-signal"),
                                        stdout: log, stderr: log)
        let ready = Date().addingTimeInterval(60)
        while !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("waiting for SIGTERM"), !server.hasExited, Date() < ready {
            usleep(20_000)
        }
        kill(server.pid, SIGTERM)
        server.wait(upTo: 30)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(server.exitCode == 3, "main's code after SIGTERM: \(String(describing: server.status)); its output:\n\(output)")
        #expect(output == "waiting for SIGTERM\nSIGTERM: handled on the main thread: true\n", "\(output)")
    }
}

/// The app: its package made from the fixture in a temporary directory, and its bundle.
private enum MainActorApp {
    /// This Switchback checkout: what the app depends on, by absolute path.
    static let switchbackRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    static var fixture: String { switchbackRoot + "/Tests/Fixtures/MainActorApp" }

    /// Writes the app's package in `directory`/MainActorApp and bundles it as a first release
    /// (no git repository: the build id is given); returns the bundle's directory.
    static func bundle(in directory: String) throws -> String {
        let package = directory + "/MainActorApp"
        try FileManager.default.createDirectory(atPath: package, withIntermediateDirectories: false)
        let template = try String(contentsOfFile: fixture + "/Package.swift.template", encoding: .utf8)
        try template.replacingOccurrences(of: "@SWITCHBACK_PATH@", with: switchbackRoot)
            .write(toFile: package + "/Package.swift", atomically: true, encoding: .utf8)
        try "1.0.0\n".write(toFile: package + "/VERSION", atomically: true, encoding: .utf8)
        try shell("cp", "-R", fixture + "/Sources", package + "/Sources")
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SWITCHBACK_") }
        environment["SWIFT_BACKTRACE"] = "enable=no"
        // A release build beside the other end-to-end tests: niced, so that their timings hold.
        let result = try runProcess("/usr/bin/nice", ["-n", "10", switchbackRoot + "/scripts/bundle", "--package", package,
                                                      "--first-release", "--build-id", "main-actor-test", "--out", package + "/dist"],
                                    environment: environment, deadline: buildDeadline)
        guard result.status == 0, !result.signaled else {
            throw TestFailure("bundling \(package) failed: \(result)\n\(result.stderr.suffix(3000))")
        }
        return package + "/dist"
    }

    /// Runs `dist/bin/launcher MODE` to its end, with a state directory of its own.
    static func launch(_ dist: String, state: String, _ mode: String) throws -> ProcessResult {
        try runProcess(dist + "/bin/launcher", [mode], environment: environment(state: state), deadline: 120)
    }

    /// What the launcher runs with: its state directory, nothing of the test's own environment.
    static func environment(state: String) -> [String: String] {
        ["SWITCHBACK_STATE_DIR": state, "PATH": "/usr/bin:/bin", "SWIFT_BACKTRACE": "enable=no"]
    }
}
