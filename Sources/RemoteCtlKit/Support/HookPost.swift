import CSwitchbackHTTP
#if canImport(Glibc)
import Glibc
#endif

/// One POST of a hook's event through the system's libcurl (`CSwitchbackHTTP`): no redirect
/// followed, at most 4 KiB of the answer kept, ended within the timeout.
enum HookPost {
    struct Answer {
        var status: Int
        /// Why no answer came, as a clause ("could not be reached (connection refused)"); nil when one did.
        var failure: String?
    }

    static func send(_ url: String, body: [UInt8], headers: [String], timeoutMilliseconds: Int) -> Answer {
        let exchange = UnsafeMutablePointer<switchback_http_exchange>.allocate(capacity: 1)
        exchange.initialize(to: switchback_http_exchange())
        let cHeaders = headers.map { strdup($0) }
        defer {
            switchback_http_free(exchange)
            exchange.deallocate()
            cHeaders.forEach { free($0) }
        }
        url.withCString { cURL in
            "switchback-hooks".withCString { cAgent in
                body.withUnsafeBufferPointer { bodyBytes in
                    cHeaders.map { UnsafePointer($0) }.withUnsafeBufferPointer { headerPointers in
                        exchange.pointee.url = cURL
                        exchange.pointee.headers = headerPointers.baseAddress
                        exchange.pointee.header_count = Int32(headerPointers.count)
                        exchange.pointee.user_agent = cAgent
                        exchange.pointee.timeout_ms = timeoutMilliseconds
                        exchange.pointee.max_body = 4096
                        exchange.pointee.post_body = bodyBytes.baseAddress
                        exchange.pointee.post_length = bodyBytes.count
                        switchback_http_get(exchange)
                    }
                }
            }
        }
        let x = exchange.pointee
        let error = withUnsafeBytes(of: x.error) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let status = x.status
        let tooLarge = x.stop == Int32(SWITCHBACK_HTTP_STOP_TOO_LARGE) || x.stop == Int32(SWITCHBACK_HTTP_STOP_ANNOUNCED_TOO_LARGE)
        if status > 0 && (x.curl_code == 0 || tooLarge) { return Answer(status: status, failure: nil) }
        let why: String
        switch x.curl_code {
        case 7: why = "could not be reached (connection refused)"
        case 28: why = "gave no answer within \(timeoutMilliseconds) ms (hooks.timeout_ms)"
        case 5, 6: why = "could not be reached (host not found)"
        case 52: why = "closed the connection without answering"
        case 56: why = "reset the connection"
        case -1: why = "could not be reached: \(error.isEmpty ? "libcurl could not be loaded" : error)"
        default: why = "could not be reached (\(error.isEmpty ? "libcurl error \(x.curl_code)" : error))"
        }
        return Answer(status: status, failure: why)
    }
}
