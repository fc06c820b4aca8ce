import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A unix datagram socket bound at a path, standing in for systemd's NOTIFY_SOCKET: it
/// collects the sd_notify messages sent to it, in order.
final class NotifyListener {
    let path: String
    private let fd: Int32
    private(set) var messages: [String] = []

    init(directory: String) throws {
        path = directory + "/notify-\(getpid())-\(Int.random(in: 0..<1_000_000)).sock"
        fd = try Self.bindDatagramSocket(at: path)
    }

    /// A unix datagram socket bound at `path` (the listeners' common part).
    static func bindDatagramSocket(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let error = errno
            close(fd)
            throw TestFailure("bind \(path) failed: \(String(cString: strerror(error)))")
        }
        return fd
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// Receives what has arrived, waiting up to `seconds` for `condition` to hold on all
    /// messages so far; returns whether it held.
    @discardableResult
    func wait(upTo seconds: Double, for condition: ([String]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition(messages) {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return false }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&entry, 1, Int32(min(left, 0.1) * 1000) + 1) > 0 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 { messages.append(String(decoding: buffer[0..<count], as: UTF8.self)) }
            }
        }
        return true
    }
}
