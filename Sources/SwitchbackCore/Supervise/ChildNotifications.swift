#if canImport(Glibc)
import Glibc
#endif
import SwitchbackSystem
import SystemdNotify

/// The supervisor's end of its children's NOTIFY_SOCKET: a datagram socket in the abstract
/// namespace, with SO_PASSCRED so every message carries the sender's pid as the kernel saw
/// it. Messages from any process but a child are dropped, as systemd's NotifyAccess=main does.
final class ChildNotifications {
    let fd: Int32
    /// The value children get in NOTIFY_SOCKET (`@switchback-<pid>-<random>`).
    let name: String

    init() throws(SwitchbackError) {
        name = "@switchback-\(getpid())-\(String(switchback_random64(), radix: 16))"
        fd = switchback_datagram_socket()
        guard fd >= 0 else { throw SwitchbackError(.ioFailure, "The supervisor cannot open its notify socket: \(errorString(errno)).", errno: errno) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_un()
        let length = switchback_unix_address(name, &address)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) } }
        guard bound == 0 else {
            let error = errno
            close(fd)
            throw SwitchbackError(.ioFailure, "The supervisor cannot bind its notify socket: \(errorString(error)).", errno: error)
        }
    }

    /// The messages waiting, each with its sender's pid, as `KEY=VALUE` pairs.
    func receive() -> [(pid: pid_t, fields: [(key: Substring, value: Substring)])] {
        var messages: [(pid: pid_t, fields: [(key: Substring, value: Substring)])] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Bounded: a flood cannot keep the loop here.
        for _ in 0..<64 {
            var pid: pid_t = 0
            let count = buffer.withUnsafeMutableBytes { switchback_receive_with_sender(fd, $0.baseAddress, $0.count, &pid) }
            if count < 0 { break }
            let text = String(decoding: buffer[0..<count], as: UTF8.self)
            let fields = text.split(separator: "\n").compactMap { line -> (key: Substring, value: Substring)? in
                guard let equals = line.firstIndex(of: "=") else { return nil }
                return (line[..<equals], line[line.index(after: equals)...])
            }
            messages.append((pid, fields))
        }
        return messages
    }
}

/// The supervisor's own link to systemd, when it runs as a `Type=notify` service: the
/// NOTIFY_SOCKET and watchdog interval systemd gave it, taken out of the environment so that
/// children get the supervisor's own instead.
struct SystemdLink {
    let socket: String
    /// Half of WATCHDOG_USEC, in seconds, when systemd asks for pings.
    let watchdogPeriod: Double?

    static func take() -> SystemdLink? {
        let socket = environmentValue("NOTIFY_SOCKET")
        var period: Double?
        if let microseconds = environmentValue("WATCHDOG_USEC").flatMap(Int.init), microseconds > 0,
           environmentValue("WATCHDOG_PID").flatMap(Int32.init).map({ $0 == getpid() }) ?? true {
            period = Double(microseconds) / 2e6
        }
        for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { unsetenv(name) }
        guard let socket, !socket.isEmpty else { return nil }
        return SystemdLink(socket: socket, watchdogPeriod: period)
    }

    func send(_ lines: String...) {
        Self.send(lines.joined(separator: "\n"), to: socket)
    }

    /// Sends one datagram; a failure is not worth more than the message.
    static func send(_ text: String, to socket: String) {
        NotifySocket(name: socket)?.send(text)
    }
}
