#if canImport(Glibc)
import Glibc
#endif

/// Which hosts a URL may reach over plain http without an operator's explicit
/// `allow_insecure_http`: the one answer for directive fetches (SwitchbackRemote's
/// `URLPolicy`) and analysis addresses (`AnalysisSpec`).
public enum NetworkHost {
    /// Whether `host` is `localhost`, an IPv4 address in 127.0.0.0/8, or `::1`
    /// (also in brackets, or as an IPv4-mapped 127.x address).
    public static func isLoopback(_ rawHost: some StringProtocol) -> Bool {
        var host = rawHost.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "localhost." { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            let bytes = withUnsafeBytes(of: v6) { Array($0) }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            if bytes.prefix(12) == ArraySlice([UInt8](repeating: 0, count: 10) + [0xFF, 0xFF]) { return bytes[12] == 127 }
        }
        return false
    }

    /// The host of an `http://` or `https://` URL (`user@` and `:port` taken off, brackets
    /// of an IPv6 address kept), or nil for another scheme or no host.
    public static func host(ofURL url: String) -> Substring? {
        let lower = url.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") { rest = url.dropFirst(7) } else if lower.hasPrefix("https://") { rest = url.dropFirst(8) } else { return nil }
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let host: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[...close]
        } else {
            host = authority.prefix { $0 != ":" }
        }
        return host.isEmpty ? nil : host
    }

    /// Whether `url` is plain `http://` to a host other than loopback.
    public static func isInsecureRemote(url: String) -> Bool {
        guard url.lowercased().hasPrefix("http://") else { return false }
        guard let host = host(ofURL: url) else { return true }
        return !isLoopback(host)
    }
}
