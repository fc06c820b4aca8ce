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

    /// The most connections one tick makes to reach both children.
    static let attemptsPerTick = 8

    /// With a baseline beside (`pids`: the baseline's, then the canary's): one tick's probes,
    /// each with the index of the child that accepted it (nil: neither). Both children accept
    /// from one queue and the split follows whichever is free (it swung from 30/70 to 97/3
    /// between two runs of the same builds), so the tick connects again, up to
    /// `attemptsPerTick` times within the timeout, until each child has answered one: each
    /// build gets a probe per tick whatever the split, the canary's absolute limits judge as
    /// many probes as without a baseline, and the comparison gets balanced samples. A probe
    /// no child accepted (refused, timed out) ends the tick.
    public func attributedProbes(at: Int64) -> [(probe: HTTPProbeWindow.Probe, holder: Int?)] {
        guard let pids else { return [(probe(at: at), nil)] }
        let deadline = MonotonicClock.milliseconds() + Int64(settings.timeoutMilliseconds)
        var outcomes: [(probe: HTTPProbeWindow.Probe, holder: Int?)] = []
        var answered = Set<Int>()
        while true {
            let left = Int(deadline - MonotonicClock.milliseconds())
            let outcome = AttributedProbe(url: settings.url, pids: pids, timeoutMilliseconds: max(1, left)).probe()
            let probe: HTTPProbeWindow.Probe
            if let failure = outcome.failure {
                probe = HTTPProbeWindow.Probe(at: at, isSuccess: false, latencyMilliseconds: nil, reason: failure)
            } else {
                let status = outcome.status ?? 0
                let success = settings.successStatuses.contains(status)
                probe = HTTPProbeWindow.Probe(at: at, isSuccess: success, latencyMilliseconds: outcome.latencyMilliseconds,
                                              reason: success ? nil : "status \(status)")
            }
            outcomes.append((probe, outcome.holder))
            guard let holder = outcome.holder else { return outcomes }
            answered.insert(holder)
            guard answered.count < pids.count, outcomes.count < Self.attemptsPerTick, MonotonicClock.milliseconds() < deadline else { return outcomes }
        }
    }

    /// Sends one GET through libcurl and returns its outcome, stamped `at` (the caller's
    /// milliseconds); which process answers does not matter. Blocks up to the timeout; never throws.
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
