import Foundation
import SystemdNotify
import Testing

/// The sd_notify client against real unix datagram sockets this test binds, by path and in
/// the abstract namespace. Serialized with the SDK's other socket tests: each binds its own
/// socket, but their timing assertions are kinder on two cores one at a time.
@Suite(.serialized)
struct NotifySocketTests {
    @Test func aMessageReachesASocketBoundAtAPath() throws {
        let receiver = try NotifyReceiver(path: try temporaryDirectory() + "/notify")
        let socket = try #require(NotifySocket(name: receiver.name))
        #expect(socket.send("READY=1\nSTATUS=serving"))
        #expect(receiver.messages() == ["READY=1\nSTATUS=serving"])
    }

    @Test func aMessageReachesASocketInTheAbstractNamespace() throws {
        let receiver = try NotifyReceiver(abstract: "switchback-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        #expect(receiver.name.hasPrefix("@"))
        let socket = try #require(NotifySocket(name: receiver.name))
        #expect(socket.send("WATCHDOG=1"))
        #expect(socket.send("EXTEND_TIMEOUT_USEC=5000000"))
        #expect(receiver.messages() == ["WATCHDOG=1", "EXTEND_TIMEOUT_USEC=5000000"])
    }

    @Test func nobodyListeningIsFalseWithoutWaiting() throws {
        let path = try temporaryDirectory() + "/gone"
        let socket = try #require(NotifySocket(name: path))
        let started = Date()
        #expect(socket.send("READY=1") == false)
        #expect(try #require(NotifySocket(name: "@switchback-nobody-\(getpid())")).send("READY=1") == false)
        #expect(Date().timeIntervalSince(started) < 1)
    }

    @Test(.timeLimit(.minutes(1))) func aFullQueueDropsTheMessageInsteadOfBlocking() throws {
        let receiver = try NotifyReceiver(path: try temporaryDirectory() + "/full")
        let socket = try #require(NotifySocket(name: receiver.name))
        // A unix datagram socket queues a few hundred messages; a blocking send would hang here.
        var dropped = false
        for _ in 0..<10_000 where !dropped { dropped = !socket.send("WATCHDOG=1") }
        #expect(dropped)
    }

    @Test func onlyPathsAndAbstractNamesAreSockets() {
        #expect(NotifySocket(name: "/run/systemd/notify")?.name == "/run/systemd/notify")
        #expect(NotifySocket(name: "@abstract")?.name == "@abstract")
        for name in ["", "@", "relative/notify", "vsock:2:1234"] {
            #expect(NotifySocket(name: name) == nil, "\(name)")
        }
        // Longer than sun_path holds: refused when sending, not truncated to another name.
        let long = try! #require(NotifySocket(name: "/" + String(repeating: "x", count: 200)))
        #expect(long.send("READY=1") == false)
    }
}

/// A unix datagram socket bound by the test: what a service manager listens on.
final class NotifyReceiver {
    let fd: Int32
    let name: String
    private let path: String?

    convenience init(path: String) throws { try self.init(name: path) }
    convenience init(abstract: String) throws { try self.init(name: "@" + abstract) }

    private init(name: String) throws {
        self.name = name
        path = name.hasPrefix("/") ? name : nil
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 } else { bytes.append(0) }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout.offset(of: \sockaddr_un.sun_path)! + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard fd >= 0, bound == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL) }
    }

    deinit {
        close(fd)
        if let path { unlink(path) }
    }

    /// The datagrams queued now, oldest first, waiting up to `timeout` seconds for the first.
    func messages(waitingUpTo timeout: Double = 2) -> [String] {
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
