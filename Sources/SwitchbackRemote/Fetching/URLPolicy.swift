#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Which URLs may be fetched: https anywhere; plain http only to loopback
/// (127.0.0.0/8, ::1, localhost) unless the manifest allows insecure http.
enum URLPolicy {
    /// Nil if `url` may be fetched, else the refusal. `redirectedFrom` words the reason for a redirect.
    static func refusal(for url: URL, allowInsecureHTTP: Bool, redirectedFrom: URL? = nil) -> SyncOutcome? {
        let scheme = url.scheme?.lowercased() ?? ""
        switch scheme {
        case "https":
            return nil
        case "http":
            if allowInsecureHTTP || isLoopback(host: url.host ?? "") { return nil }
            if let redirectedFrom {
                return .refused(.insecureRedirect, reason: "Refused the redirect from \(redirectedFrom.displayString) to \(url.displayString): plain http is only allowed to loopback; serve the directive over https.")
            }
            return .refused(.insecureURL, reason: "Refused to fetch \(url.displayString): plain http is only allowed to loopback; use https or allow insecure http in the manifest.")
        default:
            let shown = url.displayString
            if let redirectedFrom {
                return .refused(.unsupportedScheme, reason: "Refused the redirect from \(redirectedFrom.displayString) to \(shown): only https and http URLs can be fetched; fix the server's redirect.")
            }
            return .refused(.unsupportedScheme, reason: "Refused to fetch \(shown): only https (and http to loopback) URLs can be fetched; fix the directive URL.")
        }
    }

    /// Whether `host` is `localhost`, an IPv4 address in 127.0.0.0/8, or `::1`
    /// (also in brackets, or as an IPv4-mapped 127.x address).
    static func isLoopback(host rawHost: String) -> Bool {
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
}
