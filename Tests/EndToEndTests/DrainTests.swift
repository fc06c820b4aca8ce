import Foundation
import SwitchbackCore
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The drain ends when the work ends (issue 38): the launcher in a drained child tells the
/// supervisor when none of the connections it accepted holds work, and the child is stopped
/// then, with supervise.drain_ms (10 s here) only the bound. Through the real binaries, with
/// the release fixture's 1.2.0 over 1.1.9, whose switches are stop-first both ways (notes-v2).
@Suite(.serialized) struct DrainTests {
    static func server() throws -> (TestBundle, Int, SupervisedLauncher) {
        let t = try TestBundle(release: "1.2.0-after-1.1.9")
        let port = try unusedLocalPort()
        try LiveSwitchReleaseTests.configure(t, port: port)
        try t.setManifestSetting("supervise.drain_ms", "10000")
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"])
        try #require(waitUntil(seconds: 30) { NotesClient.get(port: port, path: "/notes").version == "1.2.0" }, "\(app.stderr)")
        try #require(app.wait(upTo: 10) { app.record?.childReady == true }, "\(app.stderr)")
        return (t, port, app)
    }

    /// `rollbackctl` run on a thread of its own: it returns when the switch is done.
    final class Command: Sendable {
        private let result = Mutex<ProcessResult?>(nil)

        init(_ t: TestBundle, _ arguments: String...) {
            let thread = Thread { [self] in
                let outcome = (try? t.run(t.bundle + "/bin/rollbackctl", arguments))
                    ?? ProcessResult(status: -1, stdout: "", stderr: "rollbackctl did not start", signaled: false)
                result.withLock { $0 = outcome }
            }
            thread.start()
        }

        func wait(upTo seconds: Double) -> ProcessResult? {
            _ = waitUntil(seconds: seconds) { result.withLock { $0 != nil } }
            return result.withLock { $0 }
        }
    }

    /// A client connects (the serving child accepts it at once) and sends its request half a
    /// second after the stop-first drain began: the old build answers it, and the drain ends
    /// then, long before its 10 s bound. The sample's server shuts down, at SIGTERM, every
    /// connection still waiting for its request, so a drain that ended at once would lose it.
    @Test func aRequestOnAConnectionAcceptedJustBeforeTheDrainIsAnsweredByTheOldBuild() throws {
        let (t, port, app) = try Self.server()
        defer { app.stop() }
        let oldChild = try #require(app.record?.childPID)
        var rollback: Command?
        var drainSeen = false
        let response = NotesClient.get(port: port, path: "/notes", whenConnected: {
            usleep(300_000)
            rollback = Command(t, "rollback", "--reason", "drain test")
            drainSeen = app.wait(upTo: 30) { app.record?.pause != nil }
            usleep(500_000)
        })
        #expect(drainSeen, "\(app.stderr)")
        #expect(response.status == 200 && response.version == "1.2.0", "\(response)")
        let done = try #require(rollback?.wait(upTo: 60))
        #expect(done.status == 0, "\(done)")
        #expect(app.wait(upTo: 30) { app.record?.lastSwitch?.to == .previous && app.record?.childReady == true }, "\(app.stderr)")
        let record = try #require(app.record?.lastSwitch)
        let paused = try #require(record.pausedMilliseconds)
        print("drain with a request held 500 ms: \(record.sentence)")
        #expect(record.path == "stop-first")
        #expect(app.record?.childPID != oldChild)
        // It waited for the request (sent 500 ms into the drain) and no longer.
        #expect(paused >= 500 && paused < 5000, "paused \(paused) ms")
        let drained = try #require(record.drainedAtMilliseconds), stopped = try #require(record.stoppedAtMilliseconds)
        #expect(stopped - drained >= 500 && stopped - drained < 5000, "the old build stopped \(stopped - drained) ms after the drain")
    }

    /// With no connection open, the drain ends within milliseconds of the drain signal: both
    /// ways, back (the current build converts the data first) and forward (the target's own
    /// migration), each pause far under supervise.drain_ms.
    @Test func anIdleChildIsStoppedAsSoonAsItIsDrained() throws {
        let (t, port, app) = try Self.server()
        defer { app.stop() }
        for (command, slot, version) in [("rollback", BuildSlot.previous, "1.1.9"), ("rollforward", BuildSlot.current, "1.2.0")] {
            let done = try t.rollbackctl(command, "--reason", "idle drain test")
            #expect(done.status == 0, "\(done)")
            #expect(app.wait(upTo: 30) { app.record?.lastSwitch?.to == slot && app.record?.childReady == true }, "\(app.stderr)")
            #expect(waitUntil(seconds: 10) { NotesClient.get(port: port, path: "/notes").version == version })
            let record = try #require(app.record?.lastSwitch)
            print("\(command), idle: \(record.sentence)")
            let drained = try #require(record.drainedAtMilliseconds), stopped = try #require(record.stoppedAtMilliseconds)
            #expect(record.path == "stop-first")
            #expect(stopped - drained < 2500, "\(command): the old build stopped \(stopped - drained) ms after the drain (bound 10 s)")
        }
    }
}
