import Foundation
import SystemdNotify
import Synchronization
import Testing
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

/// A unix datagram socket bound by the test: what a service manager listens on.
final class NotifyReceiver: Sendable {
    let fd: Int32
    let name: String

    init(path: String) throws {
        name = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, bound == 0 else { throw TestFailure("cannot bind \(path): errno \(errno)") }
    }

    deinit {
        close(fd)
        unlink(name)
    }

    /// The datagrams queued now, oldest first, waiting up to `timeout` seconds for the first.
    func messages(waitingUpTo timeout: Double) -> [String] {
        var received: [String] = []
        var wait = Int32(timeout * 1000)
        while true {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, wait) == 1 else { return received }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count >= 0 else { return received }
            received.append(String(decoding: buffer[0..<count], as: UTF8.self))
            wait = 0
        }
    }
}
