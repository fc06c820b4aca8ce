import CSwitchbackHTTP
#if canImport(Glibc)
import Glibc
#endif

/// One bounded HTTP request through the system's libcurl (`CSwitchbackHTTP`), copied out of
/// the C exchange: a GET (a directive, an analysis probe) or a POST (a hook's event). At most
/// `maxBody` bytes of the answer kept, never decoded, no redirect followed, ended within the
/// timeout or when `*cancel` becomes non-zero. The one wrapper of `switchback_http_get`.
public enum HTTPExchange {
    public struct Answer: Sendable {
        /// libcurl's CURLcode (0: a complete answer), or -1 when libcurl could not be loaded.
        public var curlCode: Int32
        /// A `SWITCHBACK_HTTP_STOP_` value.
        public var stop: Int32
        /// The HTTP status; 0 when no status line arrived.
        public var status: Int
        public var contentLength: Int64?
        public var body: [UInt8]
        public var etag: String?
        public var lastModified: String?
        public var date: String?
        public var contentEncoding: String
        public var redirectURL: String?
        /// libcurl's error text.
        public var error: String
        /// Time from the request to the end of the answer, in milliseconds.
        public var latencyMilliseconds: Double

        /// Whether the body passed `maxBody` (announced or streamed).
        public var isTooLarge: Bool {
            stop == Int32(SWITCHBACK_HTTP_STOP_TOO_LARGE) || stop == Int32(SWITCHBACK_HTTP_STOP_ANNOUNCED_TOO_LARGE)
        }
    }

    /// Performs the request. `direct`: never through a proxy, whatever `http_proxy` says.
    /// `post`: the body of a POST; nil for a GET.
    public static func perform(_ url: String, headers: [String] = [], userAgent: String, timeoutMilliseconds: Int, maxBody: Int,
                               cancel: UnsafeMutablePointer<Int32>? = nil, direct: Bool = false, post: [UInt8]? = nil) -> Answer {
        let exchange = UnsafeMutablePointer<switchback_http_exchange>.allocate(capacity: 1)
        exchange.initialize(to: switchback_http_exchange())
        let cHeaders = headers.map { strdup($0) }
        let noProxy: UnsafeMutablePointer<CChar>? = direct ? strdup("*") : nil
        defer {
            switchback_http_free(exchange)
            exchange.deallocate()
            cHeaders.forEach { free($0) }
            free(noProxy)
        }
        var started = timespec()
        clock_gettime(CLOCK_MONOTONIC, &started)
        let body = post ?? []
        url.withCString { cURL in
            userAgent.withCString { cAgent in
                body.withUnsafeBufferPointer { bodyBytes in
                    cHeaders.map { UnsafePointer($0) }.withUnsafeBufferPointer { headerPointers in
                        exchange.pointee.url = cURL
                        exchange.pointee.headers = headerPointers.baseAddress
                        exchange.pointee.header_count = Int32(headerPointers.count)
                        exchange.pointee.user_agent = cAgent
                        exchange.pointee.timeout_ms = timeoutMilliseconds
                        exchange.pointee.max_body = maxBody
                        exchange.pointee.cancel = cancel
                        exchange.pointee.no_proxy = UnsafePointer(noProxy)
                        if post != nil {
                            // A POST of no bytes still needs a non-NULL pointer.
                            exchange.pointee.post_body = bodyBytes.baseAddress ?? UnsafePointer(bitPattern: 1)
                            exchange.pointee.post_length = bodyBytes.count
                        }
                        switchback_http_get(exchange)
                    }
                }
            }
        }
        var ended = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ended)
        let latency = Double(ended.tv_sec - started.tv_sec) * 1000 + Double(ended.tv_nsec - started.tv_nsec) / 1_000_000
        let x = exchange.pointee
        func text<T>(_ field: T) -> String? {
            let value = withUnsafeBytes(of: field) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
            return value.isEmpty ? nil : value
        }
        return Answer(curlCode: x.curl_code, stop: x.stop, status: x.status,
                      contentLength: x.content_length >= 0 ? x.content_length : nil,
                      body: x.body_length > 0 ? Array(UnsafeBufferPointer(start: x.body, count: x.body_length)) : [],
                      etag: text(x.etag), lastModified: text(x.last_modified), date: text(x.date),
                      contentEncoding: text(x.content_encoding) ?? "", redirectURL: text(x.redirect_url), error: text(x.error) ?? "",
                      latencyMilliseconds: latency)
    }
}
