import CSwitchbackHTTP
import SwitchbackRemote
#if canImport(Glibc)
import Glibc
#endif

/// One blocking GET through the system's libcurl (`CSwitchbackHTTP`): at most `maxBody`
/// bytes of body kept, never decoded, no redirect followed, ended within `timeout`.
struct HTTPGet {
    /// What came back.
    struct Answer {
        /// libcurl's CURLcode (0: a complete answer), or -1 when libcurl could not be loaded.
        var curlCode: Int32
        /// A `SWITCHBACK_HTTP_STOP_` value.
        var stop: Int32
        /// The HTTP status; 0 when no status line arrived.
        var status: Int
        /// The body (at most `maxBody` bytes).
        var body: [UInt8]
        /// libcurl's error text.
        var error: String
        /// Time from the request to the end of the answer, in milliseconds.
        var latencyMilliseconds: Double

        /// Why nothing usable arrived, in a few words (`connection refused`, `no answer
        /// within 2000 ms`), or nil when a status arrived.
        func failure(timeoutMilliseconds: Int) -> String? {
            if status > 0, curlCode == 0 || stop == Int32(SWITCHBACK_HTTP_STOP_TOO_LARGE)
                || stop == Int32(SWITCHBACK_HTTP_STOP_ANNOUNCED_TOO_LARGE) { return nil }
            switch curlCode {
            case 7: return "connection refused"
            case 28: return "no answer within \(timeoutMilliseconds) ms"
            case 5, 6: return "host not found"
            case 52: return "the server closed the connection without answering"
            case 56: return "the connection was reset"
            case -1: return error.isEmpty ? "libcurl could not be loaded" : error
            default: return error.isEmpty ? "transfer failed (libcurl error \(curlCode))" : error
            }
        }
    }

    /// One GET (`HTTPExchange`). `direct`: never through a proxy, whatever `http_proxy` and
    /// its kin say (an http check measures the app, not a proxy in front of it).
    static func get(_ url: String, timeoutMilliseconds: Int, maxBody: Int, headers: [String] = [], direct: Bool = false) -> Answer {
        let x = HTTPExchange.perform(url, headers: headers, userAgent: "switchback-analyzer", timeoutMilliseconds: timeoutMilliseconds,
                                     maxBody: maxBody, direct: direct)
        return Answer(curlCode: x.curlCode, stop: x.stop, status: x.status, body: x.body, error: x.error, latencyMilliseconds: x.latencyMilliseconds)
    }
}
