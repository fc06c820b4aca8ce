#if canImport(Glibc)
import Glibc
#endif

/// A unix datagram socket bound by a test: what a service manager listens on for sd_notify.
/// A name starting with "/" is a path (unlinked when the receiver goes), "@" an abstract name.
public final class NotifyReceiver: Sendable {
    /// Why the socket could not be made or bound.
    public struct BindError: Error, CustomStringConvertible {
        public let description: String
    }

    public let fd: Int32
    public let name: String
    private let path: String?

    public convenience init(path: String) throws { try self.init(name: path) }
    public convenience init(abstract: String) throws { try self.init(name: "@" + abstract) }

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
        guard fd >= 0, bound == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            throw BindError(description: "cannot bind the notify socket \(name): \(reason)")
        }
    }

    deinit {
        close(fd)
        if let path { unlink(path) }
    }

    /// The datagrams queued now, oldest first, waiting up to `timeout` seconds for the first.
    public func messages(waitingUpTo timeout: Double = 2) -> [String] {
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
