import Foundation
import SystemdNotify
import Testing
import SwitchbackTestSupport

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
