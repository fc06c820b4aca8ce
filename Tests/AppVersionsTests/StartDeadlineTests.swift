import Foundation
import SystemdNotify
import Synchronization
import Testing
import SwitchbackTestSupport
@testable import AppVersions

/// The start deadline a running migration keeps extending, on a real unix datagram socket
/// bound here (the service manager's side), with a short period so the test stays short.
/// The socket is given to the migrator, never put in the test process's environment.
@Suite("Start deadline")
struct StartDeadlineTests {
    let store = InMemoryLedgerStore()

    func migrator(_ receiver: NotifyReceiver, _ body: @escaping (MigrationContext) throws -> Void) -> Migrator {
        var migrator = Migrator(store: store)
        migrator.startDeadline = .init(socket: NotifySocket(name: receiver.name), period: .milliseconds(200), margin: .seconds(3))
        migrator.register("slow", at: "1.1.0", body)
        return migrator
    }

    @Test func aStepLongerThanAPeriodKeepsExtendingUntilItEnds() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let receiver = try NotifyReceiver(path: directory.file("notify"))
        let sentBeforeTheStep = Mutex<[String]>([])
        var migrator = migrator(receiver) { _ in
            sentBeforeTheStep.withLock { $0 = receiver.messages(waitingUpTo: 0) }
            usleep(1_000_000)
        }
        migrator.baseline = { _ in "1.0.0" }
        let report = try migrator.run(for: RunningVersion(version: "1.1.0"))
        #expect(report.ran == ["slow"])
        #expect(sentBeforeTheStep.withLock { $0 } == ["EXTEND_TIMEOUT_USEC=3000000"])
        // Five periods in the step: at least two from the thread, even on a busy machine.
        let during = receiver.messages(waitingUpTo: 0)
        #expect(during.count >= 2)
        #expect(during.allSatisfy { $0 == "EXTEND_TIMEOUT_USEC=3000000" })
        // Stopped with the run: nothing more, three periods later.
        #expect(receiver.messages(waitingUpTo: 0.6) == [])
    }

    @Test func aStepThatThrowsStopsTheExtensionsToo() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let receiver = try NotifyReceiver(path: directory.file("notify"))
        var migrator = migrator(receiver) { _ in
            usleep(500_000)
            throw TestFailure("disk full")
        }
        migrator.baseline = { _ in "1.0.0" }
        #expect(throws: AppVersionsError.self) { try migrator.run(for: RunningVersion(version: "1.1.0")) }
        #expect(receiver.messages(waitingUpTo: 0).count >= 2)
        #expect(receiver.messages(waitingUpTo: 0.6) == [])
    }

    @Test func aRunWithNothingDueSendsNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let receiver = try NotifyReceiver(path: directory.file("notify"))
        var migrator = migrator(receiver) { _ in }
        migrator.baseline = { _ in "1.0.0" }
        try migrator.run(for: RunningVersion(version: "1.1.0"))
        #expect(receiver.messages(waitingUpTo: 0.5).count == 1)
        try migrator.run(for: RunningVersion(version: "1.1.0"))
        #expect(receiver.messages(waitingUpTo: 0.5) == [])
    }

    @Test func withoutASocketNothingStarts() {
        #expect(StartDeadlineExtender.start(.init(socket: nil)) == nil)
    }
}
