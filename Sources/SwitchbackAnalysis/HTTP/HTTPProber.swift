import SwitchbackCore
#if canImport(Glibc)
import Glibc
#endif

/// The probes of an http check: one GET of the check's URL with its timeout, judged by its
/// status. No answer (connection refused, timeout) is a *failed* probe, not an error: the
/// app not answering is the app's failure, not the provider's. Probes go straight to the
/// URL: a proxy named by `http_proxy` in the service's environment would be measured
/// instead of the app (Prometheus queries do follow it, as directive fetches do).
public struct HTTPProber: Sendable {
    /// The check's settings.
    public let settings: AnalysisCheck.HTTP
    /// With a baseline beside the build on probation: the baseline's pid, then the canary's;
    /// every probe is then attributed to the one that accepted it (`AttributedProbe`).
    public let pids: [pid_t]?

    public init(settings: AnalysisCheck.HTTP, pids: [pid_t]? = nil) {
        self.settings = settings
        self.pids = pids
    }

    /// The most body kept of an answer: the status is what counts.
    static let maxBody = 64 << 10

    /// Sends one GET and returns its outcome, stamped `at` (the caller's milliseconds).
    /// Blocks up to the timeout; never throws.
    public func probe(at: Int64) -> HTTPProbeWindow.Probe { attributedProbe(at: at).probe }

    /// The same, and which of `pids` accepted the probe's connection (its index; nil without
    /// pids, or when none did).
    public func attributedProbe(at: Int64) -> (probe: HTTPProbeWindow.Probe, holder: Int?) {
        guard let pids else { return (plainProbe(at: at), nil) }
        let outcome = AttributedProbe(url: settings.url, pids: pids, timeoutMilliseconds: settings.timeoutMilliseconds).probe()
        if let failure = outcome.failure {
            return (HTTPProbeWindow.Probe(at: at, isSuccess: false, latencyMilliseconds: nil, reason: failure), outcome.holder)
        }
        let status = outcome.status ?? 0
        let success = settings.successStatuses.contains(status)
        return (HTTPProbeWindow.Probe(at: at, isSuccess: success, latencyMilliseconds: outcome.latencyMilliseconds,
                                      reason: success ? nil : "status \(status)"), outcome.holder)
    }

    /// A probe through libcurl (no baseline: which process answers does not matter).
    func plainProbe(at: Int64) -> HTTPProbeWindow.Probe {
        let answer = HTTPGet.get(settings.url, timeoutMilliseconds: settings.timeoutMilliseconds, maxBody: Self.maxBody, direct: true)
        if let failure = answer.failure(timeoutMilliseconds: settings.timeoutMilliseconds) {
            return HTTPProbeWindow.Probe(at: at, isSuccess: false, latencyMilliseconds: nil, reason: failure)
        }
        let success = settings.successStatuses.contains(answer.status)
        return HTTPProbeWindow.Probe(at: at, isSuccess: success, latencyMilliseconds: answer.latencyMilliseconds,
                                     reason: success ? nil : "status \(answer.status)")
    }
}
