import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Real kill -9 and real concurrency against the real binaries.
@Suite struct CrashSafetyTests {
    /// Every state file left behind parses, and every history line is whole.
    func expectValidState(_ t: TestBundle, _ context: String) throws {
        if let bytes = FileManager.default.contents(atPath: t.state + "/state") {
            #expect(throws: Never.self, "state after \(context)") { try PersistedState.parse(Array(bytes), path: "state") }
        }
        let history = try HistoryLog(path: t.state + "/history.log").read()
        #expect(history.unreadableLines == 0, "history after \(context)")
    }

    /// The switches chain up (each starts where the last ended) and end where the state is.
    func expectCompleteHistory(_ t: TestBundle) throws {
        let switches = try HistoryLog(path: t.state + "/history.log").read().events.filter { $0.kind == .switch }
        for (before, after) in zip(switches, switches.dropFirst()) {
            #expect(before.to == after.from, "history chain broken between \(before) and \(after)")
        }
        let state = try PersistedState.parse(Array(FileManager.default.contents(atPath: t.state + "/state")!), path: "state")
        #expect(switches.last?.to == state.slot)
    }

    @Test func twoHundredKillsOfAFlippingWriterLeaveAValidState() throws {
        let t = try TestBundle()
        let ctl = t.bundle + "/bin/rollbackctl"
        let script = "while :; do \(ctl) rollback --reason k >/dev/null; \(ctl) rollforward --reason k >/dev/null; done"
        var generator = SystemRandomNumberGenerator()
        for round in 1...200 {
            let process = Process()
            // Foundation starts the child as a process group leader: kill(-pid) kills the
            // shell and whichever rollbackctl it is running at that moment.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", script]
            process.environment = ["SWITCHBACK_STATE_DIR": t.state, "PATH": "/usr/bin:/bin"]
            let waitForExit = try process.start()
            usleep(UInt32.random(in: 2_000...40_000, using: &generator))
            kill(-process.processIdentifier, SIGKILL)
            waitForExit()
            try expectValidState(t, "kill \(round)")
        }
        // The next writer completes the history if a kill fell between state and history.
        #expect(try t.rollbackctl("rollback").status == 0)
        try expectCompleteHistory(t)
        let launch = try t.launcher()
        #expect(launch.stdout.hasPrefix(t.greeting(.previous)))
        #expect(launch.stderr.isEmpty)
    }

    @Test func eightConcurrentWritersAndLaunchersKeepStateAndHistoryWhole() throws {
        let t = try TestBundle()
        let ctl = t.bundle + "/bin/rollbackctl", launcher = t.bundle + "/bin/launcher"
        var processes: [Process] = []
        for index in 0..<8 {
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/bin/sh")
            writer.arguments = ["-c", "for i in $(seq 15); do \(ctl) rollback --reason w\(index) || exit 1; \(ctl) rollforward --reason w\(index) || exit 1; done"]
            writer.environment = ["SWITCHBACK_STATE_DIR": t.state]
            writer.standardOutput = FileHandle.nullDevice
            let starter = Process()
            starter.executableURL = URL(fileURLWithPath: "/bin/sh")
            starter.arguments = ["-c", "for i in $(seq 15); do \(launcher) version >/dev/null || exit 1; done"]
            starter.environment = ["SWITCHBACK_STATE_DIR": t.state]
            processes += [writer, starter]
        }
        let waits = try processes.map { try $0.start() }
        for (process, wait) in zip(processes, waits) {
            wait()
            #expect(process.terminationStatus == 0)
        }
        try expectValidState(t, "concurrent writers")
        try expectCompleteHistory(t)
        let switches = try t.history().filter { $0.kind == "switch" }
        #expect(switches.count >= 2, "at least the first rollback and the last rollforward")
        #expect(try t.status().activeSlot == "current")
    }
}
