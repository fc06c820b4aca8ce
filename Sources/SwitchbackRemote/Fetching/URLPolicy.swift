#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

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

    /// Whether `host` is loopback: `NetworkHost.isLoopback`, the one rule.
    static func isLoopback(host: String) -> Bool { NetworkHost.isLoopback(host) }
}
