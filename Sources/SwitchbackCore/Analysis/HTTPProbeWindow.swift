/// The probes of an http check over its sliding window, and the measurement they make
/// (pure: the prober records, the driver asks for a measurement at each interval).
///
/// Probes are sent at a fixed rate, one every `probe_interval_ms` whether or not the ones
/// before have answered (`sent(at:)` when one leaves, `record` when it ends), so a slower
/// build gets as many probes as a fast one. A probe still unanswered one interval after it
/// was sent counts as answered now: slow, its latency at least its age, so slowness can only
/// push a check towards failure, never towards "fewer probes than needed".
///
/// A probe fails when it gets no answer (connection refused, timeout) or a status outside
/// `success_status`. A measurement is:
/// - inconclusive with fewer than `min_probes` probes in the window;
/// - failed when more than `max_failure_percent` of them failed:
///   `31% of 58 probes failed (limit 5%) over 60 s`;
/// - failed when the latency percentile of the probes that were answered is above
///   `latency_limit_ms`: `p99 latency 412 ms over 58 probes (limit 250 ms)`;
/// - successful otherwise: `0% of 58 probes failed (limit 5%), p99 latency 12 ms over 60 s`.
public struct HTTPProbeWindow: Sendable {
    /// One probe's outcome.
    public struct Probe: Sendable, Equatable {
        /// When it was sent (milliseconds on the caller's clock).
        public var at: Int64
        /// Whether it counts as success.
        public var isSuccess: Bool
        /// Time to the whole answer, in milliseconds; nil when there was no answer.
        public var latencyMilliseconds: Double?
        /// What went wrong, for a failed probe: `status 500`, `connection refused`.
        public var reason: String?

        public init(at: Int64, isSuccess: Bool, latencyMilliseconds: Double?, reason: String? = nil) {
            self.at = at
            self.isSuccess = isSuccess
            self.latencyMilliseconds = latencyMilliseconds
            self.reason = reason
        }
    }

    /// The check's settings.
    public let settings: AnalysisCheck.HTTP
    /// The probes in the window that ended, oldest sent first.
    public private(set) var probes: [Probe] = []
    /// When each probe still waiting for its answer was sent, oldest first.
    public private(set) var pending: [Int64] = []

    public init(settings: AnalysisCheck.HTTP) {
        self.settings = settings
    }

    /// A probe was sent `at` (the caller's milliseconds); `record` it once it ends.
    public mutating func sent(at: Int64) {
        pending.append(at)
    }

    /// A probe sent `at` ended and is not this window's (the baseline answered it).
    public mutating func withdraw(at: Int64) {
        if let index = pending.firstIndex(of: at) { pending.remove(at: index) }
    }

    /// Adds a probe that ended (probes sent at a fixed rate may end out of order) and drops
    /// those that left the window.
    public mutating func record(_ probe: Probe) {
        if let index = pending.firstIndex(of: probe.at) { pending.remove(at: index) }
        let index = probes.lastIndex(where: { $0.at <= probe.at }).map { $0 + 1 } ?? 0
        probes.insert(probe, at: index)
        dropOld(before: probes.last?.at ?? probe.at)
    }

    /// The probes sent more than one probe interval before `now` and still unanswered: each
    /// counts as answered now, with its age as its latency.
    func overdue(at now: Int64) -> [Double] {
        let interval = Int64(settings.probeIntervalMilliseconds)
        return pending.filter { now - $0 >= interval }.map { Double(now - $0) }
    }

    /// The measurement of the probes in the window ending at `now`.
    public mutating func measure(at now: Int64, check: String) -> Measurement {
        dropOld(before: now)
        let overdue = overdue(at: now)
        let count = probes.count + overdue.count
        let oldest = min(probes.first?.at ?? now, pending.first ?? now)
        let span = max(1, Int((now - oldest + 500) / 1000))
        func measured(_ phase: MeasurementPhase, _ detail: String) -> Measurement {
            Measurement(check: check, phase: phase, detail: detail)
        }
        let limit = AnalysisFormat.percent(settings.maxFailurePercent)
        guard count >= settings.minProbes else {
            return measured(.inconclusive, "\(count) probe\(count == 1 ? "" : "s") over \(span) s, fewer than the \(settings.minProbes) needed (min_probes)")
        }
        let failed = probes.count(where: { !$0.isSuccess })
        let percent = Double(failed) * 100 / Double(count)
        if percent > settings.maxFailurePercent {
            return measured(.failed, "\(AnalysisFormat.percent(percent))% of \(count) probes failed (limit \(limit)%) over \(span) s")
        }
        let percentileName = "p\(AnalysisFormat.number(settings.latencyPercentile))"
        let latency = latencyPercentile(including: overdue)
        if let latencyLimit = settings.latencyLimitMilliseconds, let latency, latency > latencyLimit {
            return measured(.failed, "\(percentileName) latency \(AnalysisFormat.number(latency.rounded())) ms over \(count) probes (limit \(AnalysisFormat.number(latencyLimit)) ms)")
        }
        let latencyText = latency.map { ", \(percentileName) latency \(AnalysisFormat.number($0.rounded())) ms" } ?? ""
        return measured(.successful, "\(AnalysisFormat.percent(percent))% of \(count) probes failed (limit \(limit)%)\(latencyText) over \(span) s")
    }

    /// The configured percentile of the answered probes' latencies (nearest rank), with the
    /// ages of the `overdue` ones, or nil when none was answered.
    public func latencyPercentile(including overdue: [Double] = []) -> Double? {
        let latencies = (probes.compactMap(\.latencyMilliseconds) + overdue).sorted()
        guard !latencies.isEmpty else { return nil }
        let rank = Int((settings.latencyPercentile * Double(latencies.count) / 100).rounded(.up))
        return latencies[min(max(rank, 1), latencies.count) - 1]
    }

    /// The most recent failed probe's reason, if any probe in the window failed.
    public var lastFailureReason: String? {
        probes.last { !$0.isSuccess }?.reason
    }

    mutating func dropOld(before now: Int64) {
        let oldest = now - Int64(settings.windowMilliseconds)
        if let keep = probes.firstIndex(where: { $0.at > oldest }) {
            if keep > 0 { probes.removeFirst(keep) }
        } else {
            probes.removeAll()
        }
        pending.removeAll { $0 <= oldest }
    }
}
