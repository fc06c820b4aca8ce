import CSwitchbackHTTP
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Fetches a directive over HTTP(S) within hard limits, and never throws.
///
/// Guarantees, whatever the server does:
/// - it returns within ``FetchOptions/deadline`` (plus scheduling jitter): libcurl's own
///   millisecond timeout ends the transfer, and our timer returns at the deadline even if
///   libcurl has not yet noticed;
/// - it holds at most ``FetchOptions/maxBodyBytes`` of body in memory, in one buffer allocated
///   up front: a larger `Content-Length` is refused before any body byte is read, a longer
///   stream is cut off the moment it passes the cap;
/// - it never inflates anything: it asks for `Accept-Encoding: identity`, never lets libcurl
///   decode, and refuses a body with any other `Content-Encoding` at its first byte (a gzip
///   bomb costs the few bytes read before that);
/// - it follows at most ``FetchOptions/maxRedirects`` redirects, each checked by the URL policy;
/// - plain http goes only to loopback unless ``FetchOptions/allowInsecureHTTP``;
/// - it sends `If-None-Match` / `If-Modified-Since` from the conditional headers, and treats
///   304 as "not modified" only when it sent one of them.
/// Nothing is cached, and no cookies are stored or sent.
///
/// It speaks HTTP through the system's libcurl (`CSwitchbackHTTP`), not URLSession: on Linux
/// URLSession always has libcurl inflate gzip and queues every received chunk for its
/// delegate without back-pressure, so neither memory nor time could be bounded (a 1 GB gzip
/// stream took 1.1 GB and 12 s against a 1 s deadline; docs/remote.md).
public struct DirectiveFetcher: Sendable {
    /// The limits and policy used.
    public var options: FetchOptions

    /// Creates a fetcher.
    public init(options: FetchOptions = FetchOptions()) {
        self.options = options
    }

    /// Fetches `url`, sending `conditional`'s validators (whatever their recorded URL and version).
    ///
    /// Cancelling the calling task ends the fetch at once with `unreachable(.cancelled)`.
    public func fetch(_ url: URL, conditional: ConditionalHeaders = .none) async -> FetchResult {
        if let refusal = URLPolicy.refusal(for: url, allowInsecureHTTP: options.allowInsecureHTTP) {
            return .failed(refusal)
        }
        let transfer = Transfer(url: url, options: options, conditional: conditional)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfer.start(continuation)
            }
        } onCancel: {
            transfer.finish(.failed(.unreachable(.cancelled, reason: "The check of \(url.displayString) was cancelled before it finished; the decision stays.")))
        }
    }
}

/// One fetch: the redirect loop on a thread of its own (libcurl blocks), the deadline timer,
/// and the caller resumed exactly once, by whichever ends first.
private final class Transfer: @unchecked Sendable {
    // The waiting caller and the result, once there is one; `cancelFlag` is written
    // atomically (switchback_http_set_flag) and read atomically by the C side.
    private struct Ending {
        var continuation: CheckedContinuation<FetchResult, Never>?
        var result: FetchResult?
    }
    private let ending = Mutex(Ending())
    private let cancelFlag: UnsafeMutablePointer<Int32>

    private let url: URL
    private let options: FetchOptions
    private let conditional: ConditionalHeaders
    private let deadline: DispatchTime

    init(url: URL, options: FetchOptions, conditional: ConditionalHeaders) {
        self.url = url
        self.options = options
        self.conditional = conditional
        deadline = .now() + options.deadlineSeconds
        cancelFlag = .allocate(capacity: 1)
        cancelFlag.initialize(to: 0)
    }

    deinit { cancelFlag.deallocate() }

    func start(_ continuation: CheckedContinuation<FetchResult, Never>) {
        let early: FetchResult? = ending.withLock { ending in
            if let result = ending.result { return result }
            ending.continuation = continuation
            return nil
        }
        if let early {
            continuation.resume(returning: early)
            return
        }
        let shown = url.displayString
        let deadlineText = options.deadlineText
        DispatchQueue.global().asyncAfter(deadline: deadline) { [self] in
            finish(.failed(.unreachable(.timedOut, reason: "No complete answer from \(shown) within \(deadlineText); the decision stays.")))
        }
        FetchThread.start { [self] in finish(run()) }
    }

    /// Ends the fetch with `result` unless it already ended: stops the transfer and resumes the caller.
    func finish(_ result: FetchResult) {
        let continuation: CheckedContinuation<FetchResult, Never>? = ending.withLock { ending in
            if ending.result != nil { return nil }
            ending.result = result
            let pending = ending.continuation
            ending.continuation = nil
            return pending
        }
        switchback_http_set_flag(cancelFlag)
        continuation?.resume(returning: result)
    }

    private var isFinished: Bool { ending.withLock { $0.result != nil } }

    /// Milliseconds left before the deadline (at least 1).
    private var remainingMilliseconds: Int {
        let now = DispatchTime.now().uptimeNanoseconds
        let end = deadline.uptimeNanoseconds
        return end > now ? max(1, Int((end - now + 999_999) / 1_000_000)) : 1
    }

    /// The redirect loop: one GET per hop, each judged before the next.
    private func run() -> FetchResult {
        var current = url
        var redirects = 0
        while true {
            if isFinished { return .failed(.unreachable(.cancelled, reason: "The check was cancelled.")) }
            let sentConditional = !conditional.isEmpty
            var headers = ["Accept: application/json", "Accept-Encoding: identity"]
            if let etag = conditional.etag { headers.append("If-None-Match: \(Self.headerSafe(etag))") }
            if let lastModified = conditional.lastModified { headers.append("If-Modified-Since: \(Self.headerSafe(lastModified))") }
            let answer = Self.get(current, headers: headers, userAgent: options.userAgent,
                                  timeoutMilliseconds: remainingMilliseconds, maxBody: options.maxBodyBytes, cancel: cancelFlag)
            if let failure = failure(of: answer, at: current) { return .failed(failure) }
            switch answer.status {
            case 200:
                return .fetched(body: answer.body, etag: answer.etag, lastModified: answer.lastModified, date: answer.date)
            case 304 where sentConditional:
                return .notModified(etag: answer.etag, lastModified: answer.lastModified)
            case 301, 302, 303, 307, 308:
                guard let target = answer.redirectURL.flatMap({ URL(string: $0) }) else {
                    return .failed(.unreachable(.httpStatus, reason: "The server at \(url.displayString) sent a redirect without a usable Location; fix the server."))
                }
                redirects += 1
                if redirects > options.maxRedirects {
                    return .failed(.unreachable(.tooManyRedirects, reason: "The server at \(url.displayString) redirected more than \(options.maxRedirects) times (a redirect loop?); point the directive URL at the final location."))
                }
                if let refusal = URLPolicy.refusal(for: target, allowInsecureHTTP: options.allowInsecureHTTP, redirectedFrom: current) {
                    return .failed(refusal)
                }
                current = target
            default:
                return .failed(statusOutcome(answer.status, sentConditional: sentConditional))
            }
        }
    }

    /// What libcurl and the C limits said, as an outcome; nil when an HTTP answer arrived whole.
    private func failure(of answer: Answer, at current: URL) -> SyncOutcome? {
        let shown = url.displayString
        switch answer.stop {
        case Int32(SWITCHBACK_HTTP_STOP_ANNOUNCED_TOO_LARGE):
            return tooLarge(announced: answer.contentLength)
        case Int32(SWITCHBACK_HTTP_STOP_TOO_LARGE):
            return tooLarge(announced: nil)
        case Int32(SWITCHBACK_HTTP_STOP_ENCODED):
            let encoding = String(answer.contentEncoding.filter { $0.isASCII && !$0.isNewline }.prefix(40))
            return .refused(.unrequestedEncoding, reason: "The answer from \(shown) is encoded (Content-Encoding: \(encoding)) though only identity was accepted; serve the directive file uncompressed.")
        case Int32(SWITCHBACK_HTTP_STOP_HEADERS_TOO_LARGE):
            return .refused(.bodyTooLarge, reason: "The answer from \(shown) has more than 64 KiB of headers; serve only the signed directive file there.")
        case Int32(SWITCHBACK_HTTP_STOP_CANCELLED):
            return .unreachable(.cancelled, reason: "The check of \(shown) was cancelled before it finished; the decision stays.")
        default:
            break
        }
        let detail = answer.error.isEmpty ? "" : " (\(answer.error))"
        switch answer.curlCode {
        case 0:
            return nil
        case -1:
            return .unreachable(.connectionFailed, reason: "Could not fetch \(shown): \(answer.error); install libcurl4.")
        case 28:
            return .unreachable(.timedOut, reason: "No complete answer from \(shown) within \(options.deadlineText); the decision stays.")
        case 7:
            return .unreachable(.connectionFailed, reason: "Could not connect to \(shown) (connection refused); check that the directive server is running.")
        case 5, 6:
            return .unreachable(.connectionFailed, reason: "Could not resolve the host of \(shown); check the URL and DNS.")
        case 35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98:
            return .unreachable(.tlsFailed, reason: "Could not make a trusted TLS connection to \(shown)\(detail); check the server's certificate.")
        case 1:
            return .refused(.unsupportedScheme, reason: "Refused to fetch \(current.displayString): only https and http URLs can be fetched; fix the directive URL.")
        default:
            return .unreachable(.connectionFailed, reason: "Could not fetch \(shown)\(detail); check the network and the directive server.")
        }
    }

    private func tooLarge(announced: Int64?) -> SyncOutcome {
        let size = announced.map { " (\($0) bytes)" } ?? ""
        return .refused(.bodyTooLarge, reason: "The answer from \(url.displayString)\(size) is over the \(options.maxBodyBytes)-byte limit; serve only the signed directive file there.")
    }

    private func statusOutcome(_ status: Int, sentConditional: Bool) -> SyncOutcome {
        let advice: String
        switch status {
        case 304: advice = "answered 304 to a request that was not conditional; fix the server"
        case 300..<400: advice = "answered with a redirect that could not be followed; point the directive URL at the final location"
        case 404, 410: advice = "has no directive there; publish one with 'rollbackctl sign' or fix the URL"
        case 401, 403: advice = "refused access; make the directive file publicly readable"
        case 500..<600: advice = "failed; the decision stays until the server recovers"
        default: advice = "did not serve the directive; check the server"
        }
        let name = HTTPStatusNames.name(of: status)
        return .unreachable(.httpStatus, reason: "The server at \(url.displayString) answered HTTP \(status)\(name.isEmpty ? "" : " " + name) and \(advice).")
    }

    /// A header value without line breaks (a validator comes from the server).
    private static func headerSafe(_ value: String) -> String {
        String(value.filter { $0 != "\r" && $0 != "\n" && $0 != "\0" }.prefix(512))
    }

    /// One hop's answer, copied out of the C exchange.
    struct Answer {
        var curlCode: Int32
        var stop: Int32
        var status: Int
        var contentLength: Int64?
        var body: Data
        var etag: String?
        var lastModified: String?
        var date: String?
        var contentEncoding: String
        var redirectURL: String?
        var error: String
    }

    /// One GET through libcurl, never following redirects (`HTTPExchange`).
    static func get(_ url: URL, headers: [String], userAgent: String, timeoutMilliseconds: Int, maxBody: Int,
                    cancel: UnsafeMutablePointer<Int32>) -> Answer {
        let x = HTTPExchange.perform(url.absoluteString, headers: headers, userAgent: userAgent, timeoutMilliseconds: timeoutMilliseconds,
                                     maxBody: maxBody, cancel: cancel)
        return Answer(curlCode: x.curlCode, stop: x.stop, status: x.status, contentLength: x.contentLength, body: Data(x.body),
                      etag: x.etag, lastModified: x.lastModified, date: x.date, contentEncoding: x.contentEncoding,
                      redirectURL: x.redirectURL, error: x.error)
    }
}

/// The reason phrases of the statuses a directive server may send.
enum HTTPStatusNames {
    static func name(of status: Int) -> String {
        switch status {
        case 300: "Multiple Choices"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: ""
        }
    }
}
