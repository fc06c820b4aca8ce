#if canImport(Glibc)
import Glibc
#endif

/// The service manager's notification socket: systemd's `sd_notify(3)` protocol, without
/// libsystemd.
///
/// `$NOTIFY_SOCKET` names a unix datagram socket, a filesystem path or, when it starts with
/// `@`, a name in the abstract namespace. Each message is one datagram of newline-separated
/// `KEY=VALUE` lines: `READY=1`, `EXTEND_TIMEOUT_USEC=<µs>`, `WATCHDOG=1`, `STATUS=<text>`.
/// Switchback's supervisor speaks the same protocol to its child as systemd does.
///
/// Sending never blocks (`MSG_DONTWAIT`), never raises SIGPIPE (`MSG_NOSIGNAL`), never leaks
/// a descriptor into a child (`SOCK_CLOEXEC`) and never traps: a message that cannot be sent
/// is dropped and ``send(_:)`` returns false.
public struct NotifySocket: Sendable, Equatable {
    /// The socket's name as `$NOTIFY_SOCKET` gives it: `/run/...` or `@abstract-name`.
    public let name: String

    /// The socket `name` designates; nil when it is neither a path (`/...`) nor an abstract
    /// name (`@...`), the forms systemd's `sd_notify(3)` accepts for unix sockets.
    public init?(name: String) {
        guard name.hasPrefix("/") || (name.hasPrefix("@") && name.utf8.count > 1), !name.utf8.contains(0) else { return nil }
        self.name = name
    }

    /// The socket `$NOTIFY_SOCKET` names; nil when it is unset, empty or not a unix socket.
    /// Read at every call: the environment is the service manager's word.
    public static var fromEnvironment: NotifySocket? {
        guard let value = getenv("NOTIFY_SOCKET") else { return nil }
        return NotifySocket(name: String(cString: value))
    }

    /// Sends `message` to the socket `$NOTIFY_SOCKET` names; does nothing and returns false
    /// when it is unset.
    @discardableResult
    public static func send(_ message: String) -> Bool {
        fromEnvironment?.send(message) ?? false
    }

    /// Sends `message` as one datagram and returns whether the whole of it was sent.
    ///
    /// Wraps `sendto(2)` with `MSG_DONTWAIT | MSG_NOSIGNAL` on a fresh `SOCK_CLOEXEC` datagram
    /// socket, closed before it returns. Returns false, without waiting, when nobody listens,
    /// the receiver's queue is full, or the name is longer than a unix address holds (107
    /// bytes for a path, 107 after the `@` for an abstract name).
    @discardableResult
    public func send(_ message: String) -> Bool {
        guard var address = address() else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var text = message
        let sent = text.withUTF8 { bytes in
            withUnsafePointer(to: &address.storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    retryingInterrupts {
                        sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), socketAddress, address.length)
                    }
                }
            }
        }
        return sent == message.utf8.count
    }

    /// The `sockaddr_un` and its length: a path with its NUL, or an abstract name after a
    /// NUL byte and without one at the end (the length says where it stops).
    private func address() -> (storage: sockaddr_un, length: socklen_t)? {
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: storage.sun_path)
        var bytes = Array(name.utf8)
        let isAbstract = bytes.first == UInt8(ascii: "@")
        if isAbstract { bytes[0] = 0 } else { bytes.append(0) }
        // A path needs its terminating NUL inside sun_path, as systemd requires.
        guard bytes.count <= capacity else { return nil }
        withUnsafeMutableBytes(of: &storage.sun_path) { path in
            path.copyBytes(from: bytes)
        }
        let length = MemoryLayout.offset(of: \sockaddr_un.sun_path)! + bytes.count
        return (storage, socklen_t(length))
    }
}

/// Retries a C call that failed with `EINTR`.
private func retryingInterrupts(_ call: () -> Int) -> Int {
    while true {
        let result = call()
        if result >= 0 || errno != EINTR { return result }
    }
}
