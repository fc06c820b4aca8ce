import SwitchbackCore
import Testing

/// An http check's sliding window: failure percentages, latency percentiles, too few probes.
@Suite struct HTTPProbeWindowTests {
    func window(maxFailurePercent: Double = 5, latencyLimit: Double? = nil, percentile: Double = 99,
                windowSeconds: Int = 60, minProbes: Int = 5) -> HTTPProbeWindow {
        HTTPProbeWindow(settings: AnalysisCheck.HTTP(url: "http://127.0.0.1:8080/", windowMilliseconds: windowSeconds * 1000,
                                                      maxFailurePercent: maxFailurePercent, latencyLimitMilliseconds: latencyLimit,
                                                      latencyPercentile: percentile, minProbes: minProbes))
    }

    /// 58 probes a second apart ending at 60 s, `failing` of them failed (status 500).
    func filled(_ window: inout HTTPProbeWindow, failing: Int, latency: (Int) -> Double = { _ in 10 }) {
        for index in 0..<58 {
            let failed = index % 58 < failing
            window.record(.init(at: Int64(3_000 + index * 1000), isSuccess: !failed, latencyMilliseconds: latency(index),
                                reason: failed ? "status 500" : nil))
        }
    }

    @Test func failsWhenMoreThanTheLimitFailed() {
        var probes = window()
        filled(&probes, failing: 18)
        let measurement = probes.measure(at: 60_500, check: "http")
        #expect(measurement == Measurement(check: "http", phase: .failed, detail: "31% of 58 probes failed (limit 5%) over 58 s"))
        #expect(measurement.sentence == "http: 31% of 58 probes failed (limit 5%) over 58 s")
        #expect(probes.lastFailureReason == "status 500")
    }

    @Test func exactlyTheLimitPasses() {
        var probes = window(maxFailurePercent: 50)
        for index in 0..<10 { probes.record(.init(at: Int64(index * 100), isSuccess: index % 2 == 0, latencyMilliseconds: 5)) }
        let measurement = probes.measure(at: 1000, check: "web")
        #expect(measurement.phase == .successful)
        #expect(measurement.detail == "50% of 10 probes failed (limit 50%), p99 latency 5 ms over 1 s")
        var none = window(maxFailurePercent: 0)
        for index in 0..<10 { none.record(.init(at: Int64(index * 100), isSuccess: index != 3, latencyMilliseconds: 5)) }
        #expect(none.measure(at: 1000, check: "web").detail == "10% of 10 probes failed (limit 0%) over 1 s")
    }

    @Test func refusedConnectionsAreFailedProbesWithoutLatency() {
        var probes = window()
        for index in 0..<6 { probes.record(.init(at: Int64(index * 500), isSuccess: false, latencyMilliseconds: nil, reason: "connection refused")) }
        #expect(probes.measure(at: 3000, check: "http").detail == "100% of 6 probes failed (limit 5%) over 3 s")
        #expect(probes.latencyPercentile() == nil)
        #expect(probes.lastFailureReason == "connection refused")
    }

    @Test func tooFewProbesAreInconclusive() {
        var probes = window(minProbes: 5)
        #expect(probes.measure(at: 0, check: "http") == Measurement(check: "http", phase: .inconclusive, detail: "0 probes over 1 s, fewer than the 5 needed (min_probes)"))
        for index in 0..<4 { probes.record(.init(at: Int64(index * 1000), isSuccess: false, latencyMilliseconds: nil)) }
        #expect(probes.measure(at: 4000, check: "http").detail == "4 probes over 4 s, fewer than the 5 needed (min_probes)")
    }

    /// Probes leave at a fixed rate: one still unanswered an interval after it was sent counts
    /// now, as slow as its age, so a slower build is measured on as many probes as a fast one
    /// and only ever nearer failure (issue 40: a +300 ms build ended inconclusive, "4 probes
    /// over 1 s, fewer than the 5 needed", and stayed).
    @Test func aProbeUnansweredForAnIntervalCountsAsSlowNotAsMissing() {
        var probes = window(latencyLimit: 250)  // probes 500 ms apart
        for index in 0..<6 { probes.sent(at: Int64(index * 500)) }
        // The first two answered in 300 ms; the others are still waiting at 2,700 ms.
        probes.record(.init(at: 0, isSuccess: true, latencyMilliseconds: 300))
        probes.record(.init(at: 500, isSuccess: true, latencyMilliseconds: 300))
        #expect(probes.pending == [1000, 1500, 2000, 2500])
        let measurement = probes.measure(at: 2700, check: "http")
        // 2 answered + 3 overdue (sent at 1,000, 1,500 and 2,000; the one sent at 2,500 is not yet
        // an interval old): 5 probes, the slowest 1,700 ms old.
        #expect(measurement == Measurement(check: "http", phase: .failed, detail: "p99 latency 1700 ms over 5 probes (limit 250 ms)"))
        // Without a latency limit they are slow successes so far; a timeout later makes them failures.
        var unlimited = window()
        for index in 0..<6 { unlimited.sent(at: Int64(index * 500)) }
        #expect(unlimited.measure(at: 2700, check: "http").detail == "0% of 5 probes failed (limit 5%), p99 latency 2700 ms over 3 s")
    }

    @Test func probesThatEndOutOfOrderAreKeptInTheOrderTheyWereSent() {
        var probes = window()
        for index in 0..<3 { probes.sent(at: Int64(index * 500)) }
        probes.record(.init(at: 1000, isSuccess: true, latencyMilliseconds: 10))
        probes.record(.init(at: 0, isSuccess: false, latencyMilliseconds: nil, reason: "timeout"))
        probes.record(.init(at: 500, isSuccess: true, latencyMilliseconds: 700))
        #expect(probes.probes.map(\.at) == [0, 500, 1000])
        #expect(probes.pending.isEmpty)
        #expect(probes.lastFailureReason == "timeout")
    }

    @Test func latencyPercentilesByNearestRank() {
        var probes = window(latencyLimit: 250)
        // Latencies 1...100 ms: p99 is 99, p50 is 50, p100 is 100.
        for index in 0..<100 { probes.record(.init(at: Int64(index * 100), isSuccess: true, latencyMilliseconds: Double(100 - index))) }
        #expect(probes.latencyPercentile() == 99)
        #expect(window(percentile: 50).withProbes(probes.probes).latencyPercentile() == 50)
        #expect(window(percentile: 100).withProbes(probes.probes).latencyPercentile() == 100)
        #expect(window(percentile: 1).withProbes(probes.probes).latencyPercentile() == 1)
        #expect(probes.measure(at: 10_000, check: "http").detail == "0% of 100 probes failed (limit 5%), p99 latency 99 ms over 10 s")
    }

    @Test func failsWhenThePercentileIsAboveTheLimit() {
        var probes = window(latencyLimit: 250)
        filled(&probes, failing: 0, latency: { $0 == 57 ? 412.4 : 20 })
        // One slow probe in 58: the 99th percentile (rank 58) is it.
        #expect(probes.measure(at: 61_000, check: "http") == Measurement(check: "http", phase: .failed, detail: "p99 latency 412 ms over 58 probes (limit 250 ms)"))
        var median = window(latencyLimit: 250, percentile: 50)
        filled(&median, failing: 0, latency: { $0 == 57 ? 412.4 : 20 })
        #expect(median.measure(at: 61_000, check: "http").detail == "0% of 58 probes failed (limit 5%), p50 latency 20 ms over 58 s")
    }

    @Test func probesLeaveTheWindow() {
        var probes = window(windowSeconds: 10)
        // Failures in the first 10 s, successes after: the window forgets the failures.
        for second in 0..<30 { probes.record(.init(at: Int64(second * 1000), isSuccess: second >= 10, latencyMilliseconds: 3)) }
        #expect(probes.probes.count == 10)
        #expect(probes.measure(at: 29_500, check: "http").phase == .successful)
        #expect(probes.measure(at: 45_000, check: "http").detail == "0 probes over 1 s, fewer than the 5 needed (min_probes)")
    }
}

extension HTTPProbeWindow {
    func withProbes(_ probes: [Probe]) -> HTTPProbeWindow {
        var copy = HTTPProbeWindow(settings: settings)
        for probe in probes { copy.record(probe) }
        return copy
    }
}
