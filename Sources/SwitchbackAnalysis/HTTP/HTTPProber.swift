import SwitchbackCore

/// The probes of an http check: one GET of the check's URL with its timeout, judged by its
/// status. No answer (connection refused, timeout) is a *failed* probe, not an error: the
/// app not answering is the app's failure, not the provider's. Probes go straight to the
/// URL: a proxy named by `http_proxy` in the service's environment would be measured
/// instead of the app (Prometheus queries do follow it, as directive fetches do).
public struct HTTPProber: Sendable {
    /// The check's settings.
    public let settings: AnalysisCheck.HTTP

    public init(settings: AnalysisCheck.HTTP) {
        self.settings = settings
    }

    /// The most body kept of an answer: the status is what counts.
    static let maxBody = 64 << 10

    /// Sends one GET and returns its outcome, stamped `at` (the caller's milliseconds).
    /// Blocks up to the timeout; never throws.
    public func probe(at: Int64) -> HTTPProbeWindow.Probe {
        let answer = HTTPGet.get(settings.url, timeoutMilliseconds: settings.timeoutMilliseconds, maxBody: Self.maxBody, direct: true)
        if let failure = answer.failure(timeoutMilliseconds: settings.timeoutMilliseconds) {
            return HTTPProbeWindow.Probe(at: at, isSuccess: false, latencyMilliseconds: nil, reason: failure)
        }
        let success = settings.successStatuses.contains(answer.status)
        return HTTPProbeWindow.Probe(at: at, isSuccess: success, latencyMilliseconds: answer.latencyMilliseconds,
                                     reason: success ? nil : "status \(answer.status)")
    }
}
