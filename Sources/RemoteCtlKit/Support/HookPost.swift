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
        let why: String
        switch x.curlCode {
        case 7: why = "could not be reached (connection refused)"
        case 28: why = "gave no answer within \(timeoutMilliseconds) ms (hooks.timeout_ms)"
        case 5, 6: why = "could not be reached (host not found)"
        case 52: why = "closed the connection without answering"
        case 56: why = "reset the connection"
        case -1: why = "could not be reached: \(x.error.isEmpty ? "libcurl could not be loaded" : x.error)"
        default: why = "could not be reached (\(x.error.isEmpty ? "libcurl error \(x.curlCode)" : x.error))"
        }
        return Answer(status: x.status, failure: why)
    }
}
