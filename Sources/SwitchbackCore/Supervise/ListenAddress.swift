#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// A TCP address the supervisor listens on for its children (`supervise.listen`):
/// `[NAME=]HOST:PORT`, HOST an IPv4 address, `[IPv6]`, or `localhost` (127.0.0.1).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// The name a child sees in LISTEN_FDNAMES (`listen` unless given).
    public var name: String
    /// The address, IPv4 (4 bytes) or IPv6 (16 bytes), in network order.
    public var host: [UInt8]
    public var port: UInt16

    public var isIPv6: Bool { host.count == 16 }

    public var description: String {
        isIPv6 ? "[\(Self.format(host, family: AF_INET6))]:\(port)" : "\(Self.format(host, family: AF_INET)):\(port)"
    }

    /// Parses one address; nil when it is not `[NAME=]HOST:PORT` with a numeric host
    /// (or `localhost`) and a port from 1 to 65535.
    public init?(_ text: Substring) {
        var rest = text
        name = "listen"
        if let equals = rest.firstIndex(of: "=") {
            let given = rest[..<equals]
            guard !given.isEmpty, given.count <= 64,
                  given.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }) else { return nil }
            name = String(given)
            rest = rest[rest.index(after: equals)...]
        }
        guard let colon = rest.lastIndex(of: ":"), let port = UInt16(rest[rest.index(after: colon)...]), port > 0 else { return nil }
        var hostText = rest[..<colon]
        let bracketed = hostText.hasPrefix("[") && hostText.hasSuffix("]")
        if bracketed { hostText = hostText.dropFirst().dropLast() }
        if hostText == "localhost" { hostText = "127.0.0.1" }
        guard let host = Self.parseHost(String(hostText), family: bracketed ? AF_INET6 : AF_INET) else { return nil }
        self.host = host
        self.port = port
    }

    /// The address a socket is bound to (getsockname), named `name`; nil for a socket that is
    /// not IPv4 or IPv6.
    init?(boundTo fd: Int32, name: String) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let found = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard found else { return nil }
        self.name = name
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            host = withUnsafeBytes(of: address.sin_addr) { Array($0) }
            port = UInt16(bigEndian: address.sin_port)
        case AF_INET6:
            let address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            host = withUnsafeBytes(of: address.sin6_addr) { Array($0) }
            port = UInt16(bigEndian: address.sin6_port)
        default:
            return nil
        }
    }

    /// Parses `supervise.listen`: addresses separated by commas or spaces.
    public static func parseList(_ text: String) -> [ListenAddress]? {
        var addresses: [ListenAddress] = []
        for word in text.split(whereSeparator: { $0 == "," || $0 == " " }) {
            guard let address = ListenAddress(word) else { return nil }
            addresses.append(address)
        }
        return addresses
    }

    /// Calls `body` with this address as a sockaddr.
    func withSocketAddress<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: host) }
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: host) }
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }

    /// Whether this is `[::]`, IPv6's any-address.
    var isIPv6Any: Bool { isIPv6 && host.allSatisfy { $0 == 0 } }

    /// Whether its socket takes IPv6 connections only (IPV6_V6ONLY). `[::]:PORT` listens on
    /// both families, as a server bound to `[::]` does by Linux's default, unless `declared`
    /// (the addresses opened with it) holds an IPv4 address with the same port: that one
    /// takes the IPv4 connections. Any other IPv6 address is IPv6 only.
    public func isIPv6Only(among declared: [ListenAddress]) -> Bool {
        guard isIPv6 else { return false }
        guard isIPv6Any else { return true }
        return declared.contains { !$0.isIPv6 && $0.port == port }
    }

    /// Opens a listening socket on this address: SO_REUSEADDR, IPV6_V6ONLY as
    /// ``isIPv6Only(among:)`` says (`declared`: every address opened with it), close-on-exec
    /// (children get it through posix_spawn's dup2). Throws a sentence.
    func open(among declared: [ListenAddress] = []) throws(SwitchbackError) -> Int32 {
        let fd = switchback_stream_socket(isIPv6 ? AF_INET6 : AF_INET, 0)
        guard fd >= 0 else { throw failure("socket", errno) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if isIPv6 {
            var only: Int32 = isIPv6Only(among: declared) ? 1 : 0
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &only, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withSocketAddress { Glibc.bind(fd, $0, $1) }
        if bound != 0 {
            let error = errno
            close(fd)
            throw failure("bind", error)
        }
        if listen(fd, SOMAXCONN) != 0 {
            let error = errno
            close(fd)
            throw failure("listen", error)
        }
        return fd
    }

    private func failure(_ call: String, _ error: Int32) -> SwitchbackError {
        SwitchbackError(.ioFailure, "The supervisor cannot listen on \(self) (supervise.listen): \(call) failed: \(errorString(error)); stop what holds the address, or declare another with scripts/bundle --listen.", errno: error)
    }

    private static func parseHost(_ text: String, family: Int32) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: family == AF_INET6 ? 16 : 4)
        let result = bytes.withUnsafeMutableBytes { inet_pton(family, text, $0.baseAddress) }
        return result == 1 ? bytes : nil
    }

    private static func format(_ host: [UInt8], family: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        _ = host.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
