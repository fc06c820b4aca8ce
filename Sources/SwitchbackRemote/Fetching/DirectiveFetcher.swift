import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fetches a directive over HTTP(S) within hard limits, and never throws.
///
/// Guarantees, whatever the server does:
/// - it returns within ``FetchOptions/deadline`` (plus scheduling jitter): our own timer
///   cancels the task, because URLSession on Linux rounds its timeouts down to whole
///   seconds and never enforces the resource timeout;
/// - it holds at most ``FetchOptions/maxBodyBytes`` plus one network chunk in memory: a
///   larger `Content-Length` is refused before reading, a longer stream is cut off;
/// - it follows at most ``FetchOptions/maxRedirects`` redirects, each checked by the URL policy;
/// - plain http goes only to loopback unless ``FetchOptions/allowInsecureHTTP``;
/// - it sends `If-None-Match` / `If-Modified-Since` from the conditional headers, and treats
///   304 as "not modified" only when it sent one of them.
/// Nothing is cached, and no cookies are stored or sent.
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
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalAndRemoteCacheData)
        request.httpMethod = "GET"
        request.setValue(options.userAgent, forHTTPHeaderField: "User-Agent")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let etag = conditional.etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        if let lastModified = conditional.lastModified { request.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since") }
        // A backstop only: Linux URLSession rounds this down to whole seconds.
        request.timeoutInterval = options.deadlineSeconds.rounded(.up) + 1

        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.timeoutIntervalForRequest = request.timeoutInterval
        configuration.timeoutIntervalForResource = request.timeoutInterval
        configuration.httpMaximumConnectionsPerHost = 1

        let delegate = FetchDelegate(url: url, options: options, sentConditional: !conditional.isEmpty)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "switchback.directive-fetch"
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
        // Not invalidateAndCancel(): cancelling while a redirect answer is in flight traps in
        // corelibs. The delegate has cancelled the task (or will at its next callback).
        defer { session.finishTasksAndInvalidate() }

        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                delegate.start(session: session, request: request, continuation: continuation)
            }
        } onCancel: {
            delegate.finish(.failed(.unreachable(.cancelled, reason: "The check of \(url.displayString) was cancelled before it finished; the decision stays.")))
        }
    }
}
