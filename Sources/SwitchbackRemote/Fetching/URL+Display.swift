#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension URL {
    /// The URL for messages: scheme, host, port and path, without user info, query or
    /// fragment (a pre-signed URL's query can hold a secret), cut to 200 characters (a
    /// redirect's Location is chosen by the server).
    var displayString: String {
        var text = absoluteString
        if var parts = URLComponents(url: self, resolvingAgainstBaseURL: true) {
            parts.user = nil
            parts.password = nil
            parts.query = nil
            parts.fragment = nil
            text = parts.string ?? text
        }
        return text.count > 200 ? String(text.prefix(197)) + "..." : text
    }
}
