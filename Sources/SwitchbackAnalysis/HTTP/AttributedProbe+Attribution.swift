import CSwitchbackProbe
#if canImport(Glibc)
import Glibc
#endif

// Which candidate accepted a connection: the kernel's view of the server's side of it
// (`CSwitchbackProbe`), looked at every 200 µs until a candidate's descriptor table holds it.
extension AttributedProbe {
    /// The two ends of a connected TCP socket, as the kernel names them.
    struct Ends {
        let family: Int32
        let local: [UInt8]
        let localPort: UInt16
        let remote: [UInt8]
        let remotePort: UInt16

        /// Reads `fd`'s ends with getsockname(2) and getpeername(2); nil when they do not read.
        init?(socket fd: Int32) {
            guard let local = Self.end(fd, getsockname), let remote = Self.end(fd, getpeername),
                  local.family == remote.family else { return nil }
            family = local.family
            (self.local, localPort) = (local.bytes, local.port)
            (self.remote, remotePort) = (remote.bytes, remote.port)
        }

        private static func end(_ fd: Int32, _ read: (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?) -> Int32)
            -> (family: Int32, bytes: [UInt8], port: UInt16)? {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let status = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { read(fd, $0, &length) } }
            guard status == 0 else { return nil }
            switch Int32(storage.ss_family) {
            case AF_INET:
                let ipv4 = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self) }
                return (AF_INET, withUnsafeBytes(of: ipv4.sin_addr) { Array($0) }, UInt16(bigEndian: ipv4.sin_port))
            case AF_INET6:
                let ipv6 = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self) }
                return (AF_INET6, withUnsafeBytes(of: ipv6.sin6_addr) { Array($0) }, UInt16(bigEndian: ipv6.sin6_port))
            default:
                return nil
            }
        }

        /// What the kernel says of the server's side of this connection.
        enum ServerSide: Equatable {
            /// No such socket (gone, or not in this network namespace).
            case absent
            /// In the accept queue, or closed by its process: no descriptor holds it.
            case waiting
            /// Accepted: its socket's inode.
            case accepted(inode: UInt)
            /// The query failed with this errno.
            case failed(Int32)
        }

        /// Wraps `switchback_probe_accepted_inode` (one exact NETLINK_SOCK_DIAG lookup).
        func serverSide() -> ServerSide {
            var inode: UInt = 0
            let found = remote.withUnsafeBytes { server in
                local.withUnsafeBytes { client in
                    switchback_probe_accepted_inode(family, server.baseAddress, remotePort, client.baseAddress, localPort, &inode)
                }
            }
            switch found {
            case 1: return inode == 0 ? .waiting : .accepted(inode: inode)
            case 0: return .absent
            default: return .failed(errno)
            }
        }
    }

    /// The index in `pids` of the process whose descriptor table holds the socket `inode`, or
    /// nil. Wraps `switchback_probe_holder` (a readlink(2) per open descriptor).
    static func holder(of inode: UInt, among pids: [pid_t]) -> Int? {
        let index = pids.withUnsafeBufferPointer { switchback_probe_holder(inode, $0.baseAddress, Int32($0.count)) }
        return index >= 0 ? Int(index) : nil
    }

    /// Looks every 200 µs until a candidate holds the server's side of the connection; fails
    /// when the deadline comes first, the server closes the connection, or the kernel query fails.
    func attribute(_ fd: Int32, _ ends: Ends, deadline: Int64) -> Result<Int, Failure> {
        var wasSeen = false
        var wasAccepted = false
        while true {
            switch ends.serverSide() {
            case .failed(let error):
                return .failure(Failure(phrase: "the kernel's socket diagnostics failed: \(Self.errorText(error))"))
            case .absent:
                break
            case .waiting:
                wasSeen = true
            case .accepted(let inode):
                wasSeen = true
                wasAccepted = true
                if let holder = Self.holder(of: inode, among: pids) { return .success(holder) }
            }
            let left = (deadline - MonotonicClock.nanoseconds()) / 1000
            if left <= 0 {
                let phrase = wasAccepted ? "not accepted by either build within \(timeoutMilliseconds) ms"
                    : wasSeen ? "not accepted within \(timeoutMilliseconds) ms"
                    : "the kernel shows no server side of the connection (NAT, or another network namespace?)"
                return .failure(Failure(phrase: phrase))
            }
            switch switchback_probe_wait_for_close(fd, Int(Swift.min(left, Int64(Self.lookIntervalMicroseconds)))) {
            case 0: continue
            case 1: return .failure(Failure(phrase: "the server closed the connection without answering"))
            default: return .failure(Failure(phrase: "the connection could not be watched: \(Self.errorText(errno))"))
            }
        }
    }
}
