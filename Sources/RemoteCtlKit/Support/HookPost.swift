import SwitchbackFiles
import SwitchbackRemote

/// One POST of a hook's event (`HTTPExchange`): no redirect followed, at most 4 KiB of the
/// answer kept, ended within the timeout.
enum HookPost {
    struct Answer {
        var status: Int
        /// Why no answer came, as a clause ("could not be reached (connection refused)"); nil when one did.
        var failure: String?
    }

    static func send(_ url: String, body: [UInt8], headers: [String], timeoutMilliseconds: Int) -> Answer {
        let x = HTTPExchange.perform(url, headers: headers, userAgent: "switchback-hooks", timeoutMilliseconds: timeoutMilliseconds,
                                     maxBody: 4096, post: body)
        if x.status > 0 && (x.curlCode == 0 || x.isTooLarge) { return Answer(status: x.status, failure: nil) }
        let why = failure(curlCode: x.curlCode, error: x.error, timeoutMilliseconds: timeoutMilliseconds)
        return Answer(status: x.status, failure: why)
    }

    /// Why no answer came, as a clause. libcurl's error text can quote the server (a
    /// certificate's subject name): it passes `OutsideText` before it reaches `hooks/status`
    /// and, through `rollbackctl status`, a terminal.
    static func failure(curlCode: Int32, error: String, timeoutMilliseconds: Int) -> String {
        let error = OutsideText(error, limit: 200).text
        switch curlCode {
        case 7: return "could not be reached (connection refused)"
        case 28: return "gave no answer within \(timeoutMilliseconds) ms (hooks.timeout_ms)"
        case 5, 6: return "could not be reached (host not found)"
        case 52: return "closed the connection without answering"
        case 56: return "reset the connection"
        case -1: return "could not be reached: \(error.isEmpty ? "libcurl could not be loaded" : error)"
        default: return "could not be reached (\(error.isEmpty ? "libcurl error \(curlCode)" : error))"
        }
    }
}
