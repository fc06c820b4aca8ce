import Foundation
@testable import SwitchbackAnalysis
import SwitchbackTestSupport
import Testing

/// Probes attributed among real processes that share one listening socket (python3 children
/// forked after `listen`, as the supervisor's baseline and canary inherit theirs): every answer
/// names its own pid, and the attribution must name the same one.
@Suite(.serialized) struct AttributedProbeTests {
    @Test func everyProbeIsAttributedToTheChildThatAnswered() throws {
        let servers = try SharedSocketServers(mode: "pair")
        defer { servers.stop() }
        // The slow child (a thread per connection, 200 after 30 ms), then the fast one (an
        // epoll loop, 500 at once).
        let probe = AttributedProbe(url: "http://127.0.0.1:\(servers.port)/health?from=test", pids: servers.pids, timeoutMilliseconds: 2000)
        let latencies = try probeBoth(probe, pids: servers.pids)
        let slow = latencies[0], fast = latencies[1]
        #expect(slow.min()! >= 30, "the slow child's answers take 30 ms: \(slow)")
        #expect(median(fast) < slow.min()!, "the fast child answers sooner: \(fast) against \(slow)")
        print("attributed: slow child \(slow.count) probes (\(summary(slow))), fast child \(fast.count) (\(summary(fast)))")
    }

    @Test func ipv6DualStackAndLocalhost() throws {
        let byName = try SharedSocketServers(mode: "pair")
        defer { byName.stop() }
        let localhost = AttributedProbe(url: "http://localhost:\(byName.port)/", pids: byName.pids, timeoutMilliseconds: 2000)
        _ = try probeBoth(localhost, pids: byName.pids)

        guard let why = ipv6Unavailable() else {
            let servers = try SharedSocketServers(mode: "pair", host: "::1")
            defer { servers.stop() }
            let probe = AttributedProbe(url: "http://[::1]:\(servers.port)/", pids: servers.pids, timeoutMilliseconds: 2000)
            let latencies = try probeBoth(probe, pids: servers.pids)
            print("attributed over ::1: \(latencies[0].count) and \(latencies[1].count) probes")
            // A dual-stack listener on [::] (as many servers bind) probed over IPv4: its
            // connections are IPv6 sockets with mapped addresses, found by their IPv4 ends.
            let dual = try SharedSocketServers(mode: "pair", host: "::")
            defer { dual.stop() }
            let overIPv4 = AttributedProbe(url: "http://127.0.0.1:\(dual.port)/", pids: dual.pids, timeoutMilliseconds: 2000)
            _ = try probeBoth(overIPv4, pids: dual.pids)
            return
        }
        print("AttributedProbeTests: IPv6 skipped: \(why)")
    }

    @Test func aClosedPortIsRefused() throws {
        let port = try freeLoopbackPort()
        let outcome = AttributedProbe(url: "http://127.0.0.1:\(port)/", pids: [getpid()], timeoutMilliseconds: 2000).probe()
        #expect(outcome == AttributedProbe.Outcome(failure: "connection refused"))
    }

    @Test func aServerThatNeverAnswersFailsWithinTheTimeout() throws {
        let servers = try SharedSocketServers(mode: "silent")
        defer { servers.stop() }
        let (outcome, seconds) = timed {
            AttributedProbe(url: "http://127.0.0.1:\(servers.port)/", pids: [servers.pids[1]], timeoutMilliseconds: 1000).probe()
        }
        #expect(outcome == AttributedProbe.Outcome(holder: 0, failure: "no answer within 1000 ms"))
        #expect(seconds < 1.5)
    }

    @Test func aProcessOutsideThePidsIsNeitherBuild() throws {
        // The parent holds only the listening socket; its child accepts.
        let servers = try SharedSocketServers(mode: "silent")
        defer { servers.stop() }
        let (outcome, seconds) = timed {
            AttributedProbe(url: "http://127.0.0.1:\(servers.port)/", pids: [servers.pids[0], getpid()], timeoutMilliseconds: 1000).probe()
        }
        #expect(outcome == AttributedProbe.Outcome(failure: "not accepted by either build within 1000 ms"))
        #expect(seconds < 1.5)
    }

    @Test func aConnectionNobodyAcceptsIsNotAttributed() throws {
        let servers = try SharedSocketServers(mode: "idle")
        defer { servers.stop() }
        let (outcome, seconds) = timed {
            AttributedProbe(url: "http://127.0.0.1:\(servers.port)/", pids: servers.pids, timeoutMilliseconds: 1000).probe()
        }
        #expect(outcome == AttributedProbe.Outcome(failure: "not accepted within 1000 ms"))
        #expect(seconds < 1.5)
    }

    @Test func hostileAnswersAreFailuresNeverCrashes() throws {
        let servers = try SharedSocketServers(mode: "hostile")
        defer { servers.stop() }
        let probe = AttributedProbe(url: "http://127.0.0.1:\(servers.port)/", pids: servers.pids, timeoutMilliseconds: 2000)
        // Headers without end, then an SSH banner, then a chunked answer that leaves the
        // connection open (its last chunk ends it).
        let endless = probe.probe()
        #expect(endless.holder == 0 && endless.failure == "the answer's headers exceed 64 KiB" && endless.status == nil)
        let banner = probe.probe()
        #expect(banner == AttributedProbe.Outcome(holder: 0, failure: "the answer does not read as HTTP"))
        let chunked = probe.probe()
        #expect(chunked.failure == nil && chunked.status == 200 && chunked.holder == 0)
        #expect(String(decoding: chunked.body, as: UTF8.self) == "pid=\(servers.pids[0])")
        #expect((chunked.latencyMilliseconds ?? 2000) < 1000)
    }

    /// What one attribution costs: the sock_diag lookup, the scan of the holder's descriptors
    /// alone and of three candidates' (this test process's first), and the time from a
    /// completed connect to its holder found (the accept included).
    @Test func theCostOfOneAttribution() throws {
        let servers = try SharedSocketServers(mode: "silent")
        defer { servers.stop() }
        let probe = AttributedProbe(url: "http://127.0.0.1:\(servers.port)/", pids: servers.pids, timeoutMilliseconds: 2000)
        let parts = try #require(probe.parts)
        var waits: [Double] = []
        for round in 0..<20 {
            let deadline = MonotonicClock.nanoseconds() + 2_000_000_000
            let fd = try #require(try? probe.connect(to: parts, deadline: deadline).get())
            defer { close(fd) }
            let ends = try #require(AttributedProbe.Ends(socket: fd))
            let connected = MonotonicClock.nanoseconds()
            #expect(try probe.attribute(fd, ends, deadline: deadline).get() == 1)
            waits.append(Double(MonotonicClock.nanoseconds() - connected) / 1_000_000)
            guard round == 0, case .accepted(let inode) = ends.serverSide() else { continue }

            let rounds = 500
            func microseconds(_ body: () -> Void) -> Double {
                let started = MonotonicClock.nanoseconds()
                for _ in 0..<rounds { body() }
                return Double(MonotonicClock.nanoseconds() - started) / Double(rounds) / 1000
            }
            let candidates = [getpid(), servers.pids[0], servers.pids[1]]
            let lookup = microseconds { _ = ends.serverSide() }
            let holderOnly = microseconds { _ = AttributedProbe.holder(of: inode, among: [servers.pids[1]]) }
            let three = microseconds { _ = AttributedProbe.holder(of: inode, among: candidates) }
            #expect(AttributedProbe.holder(of: inode, among: candidates) == 2)
            let descriptors = { (pid: pid_t) in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1 }
            print(String(format: "attribution: sock_diag lookup %.1f µs; fd scan of the holder alone %.1f µs (%d descriptors), of 3 processes %.1f µs (%d, %d, %d descriptors)",
                         lookup, holderOnly, descriptors(servers.pids[1]), three, descriptors(candidates[0]), descriptors(candidates[1]), descriptors(candidates[2])))
        }
        print("attribution: connect to holder found, 20 connections: \(summary(waits))")
    }

    @Test func urls() {
        typealias Parts = AttributedProbe.Parts
        #expect(AttributedProbe.parse("http://127.0.0.1:8080/health?x=1#top")
            == Parts(host: .address(family: AF_INET, bytes: [127, 0, 0, 1]), port: 8080, authority: "127.0.0.1:8080", target: "/health?x=1"))
        #expect(AttributedProbe.parse("HTTP://[::1]:81")
            == Parts(host: .address(family: AF_INET6, bytes: Array(repeating: 0, count: 15) + [1]), port: 81, authority: "[::1]:81", target: "/"))
        #expect(AttributedProbe.parse("http://localhost?q")?.host == .localhost)
        #expect(AttributedProbe.parse("http://localhost?q")?.target == "/?q")
        #expect(AttributedProbe.parse("http://app.internal/")?.port == 80)
        for bad in ["https://127.0.0.1/", "http://user@127.0.0.1/", "http://127.0.0.1:0/", "http://127.0.0.1:65536/",
                    "http://127.0.0.1/a b", "http://127.0.0.1/\r\nX: y", "http://[::1/", "http://::1/", "http://", "http:///x"] {
            #expect(AttributedProbe.parse(bad) == nil, "\(bad)")
        }
        #expect(AttributedProbe(url: "ftp://x/", pids: [], timeoutMilliseconds: 100).probe()
            == AttributedProbe.Outcome(failure: "the URL is not http://HOST:PORT/PATH"))
    }

    /// Probes until each pid answered at least 3 times (40 probes at least, 300 at most: an
    /// epoll loop and a blocking `accept` beside it do not share the queue evenly) and checks
    /// each outcome; the latencies by holder.
    func probeBoth(_ probe: AttributedProbe, pids: [pid_t]) throws -> [[Double]] {
        var latencies: [[Double]] = [[], []]
        var count = 0
        while count < 40 || latencies.contains(where: { $0.count < 3 }) && count < 300 {
            count += 1
            let outcome = probe.probe()
            #expect(outcome.failure == nil, "probe \(count): \(outcome)")
            let holder = try #require(outcome.holder, "probe \(count): \(outcome)")
            #expect(String(decoding: outcome.body, as: UTF8.self) == "pid=\(pids[holder])", "probe \(count)")
            #expect(outcome.status == (holder == 0 ? 200 : 500))
            latencies[holder].append(try #require(outcome.latencyMilliseconds))
        }
        #expect(latencies.allSatisfy { $0.count >= 3 }, "both children answered: \(latencies.map(\.count)) over \(count) probes")
        return latencies
    }
}

private func timed<T>(_ body: () -> T) -> (T, Double) {
    let started = Date()
    let result = body()
    return (result, Date().timeIntervalSince(started))
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

private func summary(_ values: [Double]) -> String {
    String(format: "min %.2f, median %.2f, max %.2f ms", values.min() ?? .nan, median(values), values.max() ?? .nan)
}

/// Why ::1 cannot be listened on here, or nil when it can.
private func ipv6Unavailable() -> String? {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return "no IPv6 socket (errno \(errno))" }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
    }
    return bound == 0 ? nil : "::1 cannot be bound (errno \(errno))"
}

/// A python3 parent that listens on `host` (`::`: dual-stack), port 0, and forks children that inherit the
/// socket, by `mode`: `pair` (pids: a slow child answering 200 after 30 ms with a thread per
/// connection, a fast one answering 500 at once from an epoll loop; each body `pid=PID`),
/// `silent` (pids: the parent, which never accepts, and a child that accepts and never
/// answers), `hostile` (one child answering in turn endless headers, an SSH banner, a chunked
/// body left open), `idle` (the parent alone, never accepting). Children die with the parent;
/// `stop` kills the process group.
private final class SharedSocketServers {
    let port: Int
    let pids: [pid_t]
    private let process: Process

    init(mode: String, host: String = "127.0.0.1") throws {
        let (process, output) = pythonServerProcess(["-c", Self.script, mode, host])
        try process.run()
        self.process = process
        var line: [UInt8] = []
        while !line.contains(UInt8(ascii: "\n")) {
            let more = output.fileHandleForReading.availableData
            if more.isEmpty { break }
            line += more
        }
        let fields = String(decoding: line, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
        guard fields.count >= 2 else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestSupportFailure("the python3 servers did not start (mode \(mode), host \(host))")
        }
        port = Int(fields[0])
        pids = Array(fields.dropFirst())
    }

    func stop() {
        kill(-process.processIdentifier, SIGKILL)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    static let script = #"""
        import ctypes, os, selectors, signal, socket, sys, threading, time

        mode, host = sys.argv[1], sys.argv[2]
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        if host == "::":
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        listener.bind((host, 0))
        listener.listen(128)
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        libc = ctypes.CDLL(None)

        def child(serve):
            pid = os.fork()
            if pid == 0:
                libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: never outlive the parent
                try:
                    serve()
                finally:
                    os._exit(0)
            return pid

        def request(conn):
            data = b""
            conn.settimeout(10)
            while b"\r\n\r\n" not in data:
                more = conn.recv(4096)
                if not more:
                    return None
                data += more
            return data

        def answer(conn, status, delay):
            try:
                if request(conn) is None:
                    return
                time.sleep(delay)
                body = b"pid=%d" % os.getpid()
                conn.sendall(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (status, len(body), body))
            except OSError:
                pass
            finally:
                conn.close()

        def slow():
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=answer, args=(conn, 200, 0.03), daemon=True).start()

        def fast():
            events = selectors.DefaultSelector()
            events.register(listener, selectors.EVENT_READ)
            while True:
                events.select()
                conn, _ = listener.accept()
                answer(conn, 500, 0)

        def silent():
            kept = []
            while True:
                conn, _ = listener.accept()
                kept.append(conn)

        def hostile():
            pid = b"%d" % os.getpid()
            answers = [
                None,
                b"SSH-2.0-OpenSSH_9.2\r\n",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npid=\r\n%x;ext=1\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n" % (len(pid), pid),
            ]
            turn = 0
            kept = []
            while True:
                conn, _ = listener.accept()
                kept.append(conn)
                request(conn)
                which = turn % 3
                turn += 1
                try:
                    if which == 0:
                        conn.sendall(b"HTTP/1.1 200 OK\r\n")
                        for _ in range(2000):
                            conn.sendall(b"X-Padding: " + b"a" * 100 + b"\r\n")
                    else:
                        conn.sendall(answers[which])
                except OSError:
                    pass

        port = listener.getsockname()[1]
        if mode == "pair":
            pids = [child(slow), child(fast)]
        elif mode == "silent":
            pids = [os.getpid(), child(silent)]
        elif mode == "hostile":
            pids = [child(hostile)]
        else:
            pids = [os.getpid()]
        print(port, *pids, flush=True)
        while True:
            time.sleep(3600)
        """#
}
