import Foundation
import Dispatch
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The URLSession delegate behind one ``DirectiveFetcher/fetch(_:conditional:)``: streams the
/// body under the cap, vets redirects, runs the deadline timer, and resumes the caller exactly once.
///
/// Cancelling safely around redirects: swift-corelibs-foundation traps ("Received callback
/// for HTTP redirection, but we're not waiting for it") if the task is cancelled after it
/// asked the delegate about a redirect and before it processed the answer. So while a
/// redirect answer is in flight, `finish` does not cancel the task: it only resumes the
/// caller, and the next delegate callback (which comes after the answer was processed)
/// cancels it. A redirect question that arrives after the task was cancelled is never answered.
final class FetchDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // All mutable state is guarded by `lock`; the class is therefore safe to share.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<FetchResult, Never>?
    private var earlyResult: FetchResult?
    private var isFinished = false
    private var task: URLSessionTask?
    private var timer: DispatchWorkItem?
    private var body = Data()
    private var response: HTTPURLResponse?
    private var redirects = 0
    /// A redirect answer was given and URLSession has not called back since.
    private var isRedirectInFlight = false
    /// `finish` wanted to cancel while a redirect answer was in flight.
    private var isCancelDeferred = false
    /// `task.cancel()` has been called.
    private var isCancelIssued = false

    private let url: URL
    private let options: FetchOptions
    private let sentConditional: Bool

    init(url: URL, options: FetchOptions, sentConditional: Bool) {
        self.url = url
        self.options = options
        self.sentConditional = sentConditional
    }

    /// Starts the task and the deadline timer; `continuation` is resumed exactly once.
    func start(session: URLSession, request: URLRequest, continuation: CheckedContinuation<FetchResult, Never>) {
        let early: FetchResult? = lock.withLock {
            if let earlyResult { return earlyResult }
            self.continuation = continuation
            return nil
        }
        if let early {
            continuation.resume(returning: early)
            return
        }
        let task = session.dataTask(with: request)
        let deadline = options.deadlineText
        let shown = url.displayString
        let timer = DispatchWorkItem { [weak self] in
            self?.finish(.failed(.unreachable(.timedOut, reason: "No complete answer from \(shown) within \(deadline); the decision stays.")))
        }
        let proceed: Bool = lock.withLock {
            if isFinished { return false }
            self.task = task
            self.timer = timer
            return true
        }
        guard proceed else { return }  // never resumed, nothing to cancel
        DispatchQueue.global().asyncAfter(deadline: .now() + options.deadlineSeconds, execute: timer)
        task.resume()
    }

    /// Ends the fetch with `result` unless it already ended: resumes the caller, stops the
    /// timer and cancels the task (now, or at the next callback if a redirect answer is in flight).
    func finish(_ result: FetchResult) {
        let (continuation, task, timer): (CheckedContinuation<FetchResult, Never>?, URLSessionTask?, DispatchWorkItem?) = lock.withLock {
            if isFinished { return (nil, nil, nil) }
            isFinished = true
            let pending = self.continuation
            self.continuation = nil
            if pending == nil { earlyResult = result }
            body = Data()
            var cancelNow: URLSessionTask?
            if isRedirectInFlight {
                isCancelDeferred = true
            } else if let task = self.task {
                isCancelIssued = true
                cancelNow = task
            }
            return (pending, cancelNow, self.timer)
        }
        timer?.cancel()
        task?.cancel()
        continuation?.resume(returning: result)
    }

    /// Called first by every callback except the redirect one: URLSession has processed any
    /// redirect answer, so a deferred cancel can happen now. Returns whether the fetch is over.
    private func settle() -> Bool {
        let (finished, cancel): (Bool, URLSessionTask?) = lock.withLock {
            isRedirectInFlight = false
            var cancel: URLSessionTask?
            if isCancelDeferred {
                isCancelDeferred = false
                isCancelIssued = true
                cancel = task
            }
            return (isFinished, cancel)
        }
        cancel?.cancel()
        return finished
    }

    // MARK: URLSessionDataDelegate

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        enum Step { case ignore, stop, judge(Int) }
        let step: Step = lock.withLock {
            // Already cancelled: URLSession is no longer waiting; answering would trap.
            if isCancelIssued { return .ignore }
            isRedirectInFlight = true
            if isFinished { return .stop }
            redirects += 1
            return .judge(redirects)
        }
        guard case .judge(let count) = step else {
            if case .stop = step { completionHandler(nil) }
            return
        }
        let failure: FetchResult?
        if request.url == nil {
            failure = .failed(.unreachable(.httpStatus, reason: "The server at \(url.displayString) sent a redirect without a usable Location; fix the server."))
        } else if count > options.maxRedirects {
            failure = .failed(.unreachable(.tooManyRedirects, reason: "The server at \(url.displayString) redirected more than \(options.maxRedirects) times (a redirect loop?); point the directive URL at the final location."))
        } else if let refusal = URLPolicy.refusal(for: request.url!, allowInsecureHTTP: options.allowInsecureHTTP, redirectedFrom: response.url ?? url) {
            failure = .failed(refusal)
        } else {
            failure = nil
        }
        if let failure {
            finish(failure)  // defers the cancel: the redirect answer is in flight
            completionHandler(nil)
        } else {
            completionHandler(request)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse, completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        // corelibs ignores this handler (it cannot pause libcurl); cancelling is done by `finish`.
        completionHandler(.allow)
        if settle() { return }
        guard let http = response as? HTTPURLResponse else {
            finish(.failed(.unreachable(.httpStatus, reason: "The answer from \(url.displayString) is not an HTTP response; fix the directive URL.")))
            return
        }
        if http.statusCode == 200 && http.expectedContentLength > Int64(options.maxBodyBytes) {
            finish(.failed(tooLarge(announced: http.expectedContentLength)))
            return
        }
        lock.withLock { self.response = http }
        if http.statusCode != 200 {
            // Nothing in the body of a non-200 answer matters; stop now.
            finish(statusResult(http))
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if settle() { return }
        let overflow: Bool = lock.withLock {
            if isFinished { return false }
            body.append(data)
            return body.count > options.maxBodyBytes
        }
        if overflow {
            finish(.failed(tooLarge(announced: nil)))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if settle() { return }
        if let error {
            finish(.failed(unreachable(for: error)))
            return
        }
        let (response, body): (HTTPURLResponse?, Data) = lock.withLock { (self.response, self.body) }
        guard let response else {
            finish(.failed(.unreachable(.connectionFailed, reason: "The connection to \(url.displayString) ended without an HTTP answer; check the directive server.")))
            return
        }
        if response.statusCode != 200 {
            finish(statusResult(response))
            return
        }
        if body.count > options.maxBodyBytes {
            finish(.failed(tooLarge(announced: nil)))
            return
        }
        finish(.fetched(body: body, etag: response.value(forHTTPHeaderField: "ETag"), lastModified: response.value(forHTTPHeaderField: "Last-Modified")))
    }

    // MARK: Outcomes

    private func tooLarge(announced: Int64?) -> SyncOutcome {
        let size = announced.map { " (\($0) bytes)" } ?? ""
        return .refused(.bodyTooLarge, reason: "The answer from \(url.displayString)\(size) is over the \(options.maxBodyBytes)-byte limit; serve only the signed directive file there.")
    }

    private func statusResult(_ response: HTTPURLResponse) -> FetchResult {
        let status = response.statusCode
        if status == 304 && sentConditional {
            return .notModified(etag: response.value(forHTTPHeaderField: "ETag"), lastModified: response.value(forHTTPHeaderField: "Last-Modified"))
        }
        let name = HTTPURLResponse.localizedString(forStatusCode: status).capitalized
        let advice: String
        switch status {
        case 304: advice = "answered 304 to a request that was not conditional; fix the server"
        case 300..<400: advice = "answered with a redirect that could not be followed; point the directive URL at the final location"
        case 404, 410: advice = "has no directive there; publish one with 'rollbackctl sign' or fix the URL"
        case 401, 403: advice = "refused access; make the directive file publicly readable"
        case 500..<600: advice = "failed; the decision stays until the server recovers"
        default: advice = "did not serve the directive; check the server"
        }
        return .failed(.unreachable(.httpStatus, reason: "The server at \(url.displayString) answered HTTP \(status) \(name) and \(advice)."))
    }

    private func unreachable(for error: any Error) -> SyncOutcome {
        let shown = url.displayString
        let nsError = error as NSError
        guard nsError.domain == NSURLErrorDomain else {
            return .unreachable(.connectionFailed, reason: "Could not fetch \(shown) (\(nsError.localizedDescription)); check the network and the directive server.")
        }
        switch URLError.Code(rawValue: nsError.code) {
        case .timedOut:
            return .unreachable(.timedOut, reason: "No complete answer from \(shown) within \(options.deadlineText); the decision stays.")
        case .cancelled:
            return .unreachable(.cancelled, reason: "The check of \(shown) was cancelled before it finished; the decision stays.")
        case .cannotConnectToHost:
            return .unreachable(.connectionFailed, reason: "Could not connect to \(shown) (connection refused); check that the directive server is running.")
        case .cannotFindHost, .dnsLookupFailed:
            return .unreachable(.connectionFailed, reason: "Could not resolve the host of \(shown); check the URL and DNS.")
        case .notConnectedToInternet, .networkConnectionLost:
            return .unreachable(.connectionFailed, reason: "The network connection to \(shown) failed; check this machine's network.")
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected, .clientCertificateRequired:
            return .unreachable(.tlsFailed, reason: "Could not make a trusted TLS connection to \(shown) (\(nsError.localizedDescription)); check the server's certificate.")
        case .httpTooManyRedirects:
            return .unreachable(.tooManyRedirects, reason: "The server at \(shown) redirected too many times (a redirect loop?); point the directive URL at the final location.")
        default:
            return .unreachable(.connectionFailed, reason: "Could not fetch \(shown) (\(nsError.localizedDescription)); check the network and the directive server.")
        }
    }
}
