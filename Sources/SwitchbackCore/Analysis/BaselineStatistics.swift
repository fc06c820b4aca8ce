import Glibc

/// The statistics of the baseline comparison (`BaselineComparison`), as pure functions of
/// the samples: the Mann–Whitney U test and the Hodges–Lehmann shift for latencies, Fisher's
/// exact test for failures. Each gives the figures SciPy gives for the same input
/// (`scipy.stats.mannwhitneyu`, `scipy.stats.fisher_exact`); the tests hold SciPy's values.
public enum BaselineStatistics {
    /// The outcome of a one-sided Mann–Whitney U test.
    public struct RankTest: Sendable, Equatable {
        /// The canary's U: its rank sum less `n_c(n_c + 1)/2`, ties given their midrank. It
        /// counts the pairs in which the canary's value is larger, a tie as half a pair.
        public var u: Double
        /// The standard score of `u` after the continuity correction (0 when nothing can be told apart).
        public var z: Double
        /// The one-sided p-value, from 0 to 1.
        public var pValue: Double

        public init(u: Double, z: Double, pValue: Double) {
            self.u = u
            self.z = z
            self.pValue = pValue
        }
    }

    /// The most pairs `hodgesLehmannShift` takes the differences of (500 × 500).
    public static let maximumShiftPairs = 250_000

    /// The Mann–Whitney U test of "canary values tend to be larger than baseline values".
    ///
    /// The p-value is the normal approximation with the variance corrected for ties and a
    /// continuity correction of 0.5, as `scipy.stats.mannwhitneyu(canary, baseline,
    /// alternative='greater', method='asymptotic', use_continuity=True)` computes it. It is 1
    /// when either side is empty, and when every value is equal (nothing to tell apart).
    /// NaN values are left out.
    public static func mannWhitneyGreater(canary: [Double], baseline: [Double]) -> RankTest {
        let canary = canary.filter { !$0.isNaN }
        let baseline = baseline.filter { !$0.isNaN }
        guard !canary.isEmpty, !baseline.isEmpty else { return RankTest(u: 0, z: 0, pValue: 1) }
        let pooled = (canary.map { ($0, true) } + baseline.map { ($0, false) }).sorted { $0.0 < $1.0 }
        var canaryRankSum = 0.0
        var tieTerm = 0.0
        var start = 0
        while start < pooled.count {
            var end = start + 1
            while end < pooled.count, pooled[end].0 == pooled[start].0 { end += 1 }
            // Ranks start + 1 ... end share their mean.
            let midrank = Double(start + 1 + end) / 2
            let ties = Double(end - start)
            tieTerm += ties * ties * ties - ties
            for index in start..<end where pooled[index].1 { canaryRankSum += midrank }
            start = end
        }
        let nc = Double(canary.count), nb = Double(baseline.count), n = nc + nb
        let u = canaryRankSum - nc * (nc + 1) / 2
        let variance = nc * nb / 12 * ((n + 1) - tieTerm / (n * (n - 1)))
        guard variance > 0 else { return RankTest(u: u, z: 0, pValue: 1) }
        let z = (u - nc * nb / 2 - 0.5) / variance.squareRoot()
        let p = 0.5 * erfc(z / 2.0.squareRoot())
        return RankTest(u: u, z: z, pValue: min(max(p, 0), 1))
    }

    /// The Hodges–Lehmann estimate of how much larger the canary's values are: the median of
    /// every difference `canary[i] − baseline[j]`.
    ///
    /// Bounded to `maximumShiftPairs` (250,000) differences: when `n_c × n_b` is larger, the
    /// last (most recent) values are kept, the larger side cut first and both to 500 when
    /// both exceed it. 0 when either side is empty. NaN values are left out.
    public static func hodgesLehmannShift(canary: [Double], baseline: [Double]) -> Double {
        var canary = canary.filter { !$0.isNaN }
        var baseline = baseline.filter { !$0.isNaN }
        guard !canary.isEmpty, !baseline.isEmpty else { return 0 }
        if canary.count * baseline.count > maximumShiftPairs {
            let side = 500  // √maximumShiftPairs
            let smaller = min(canary.count, baseline.count)
            let (keepCanary, keepBaseline): (Int, Int)
            if smaller <= side {
                let larger = maximumShiftPairs / smaller
                (keepCanary, keepBaseline) = canary.count == smaller ? (smaller, larger) : (larger, smaller)
            } else {
                (keepCanary, keepBaseline) = (side, side)
            }
            canary = Array(canary.suffix(keepCanary))
            baseline = Array(baseline.suffix(keepBaseline))
        }
        var differences: [Double] = []
        differences.reserveCapacity(canary.count * baseline.count)
        for c in canary {
            for b in baseline { differences.append(c - b) }
        }
        return median(differences) ?? 0
    }

    /// The median: the middle value, or the mean of the two middle values of an even count;
    /// nil for no values.
    public static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// Fisher's exact test of "the canary's failure proportion is greater than the
    /// baseline's": the probability of `canaryFailures` or more failures among the canary's
    /// probes when the failures of both fell on the probes at random (the hypergeometric
    /// distribution with the table's margins fixed), as `scipy.stats.fisher_exact([[cf, ct −
    /// cf], [bf, bt − bf]], alternative='greater')` computes it.
    ///
    /// Computed in log space with `lgamma(3)`, so totals of 100,000 and more work, and a
    /// baseline without any failure is an ordinary case (6 of 20 against 0 of 20: p 0.0101).
    /// 1 when nothing failed. Counts must be between 0 and their totals (it traps otherwise).
    public static func fisherGreater(canaryFailures: Int, canaryTotal: Int, baselineFailures: Int, baselineTotal: Int) -> Double {
        precondition(canaryFailures >= 0 && canaryFailures <= canaryTotal,
                     "BaselineStatistics.fisherGreater: canaryFailures \(canaryFailures) not in 0...\(canaryTotal)")
        precondition(baselineFailures >= 0 && baselineFailures <= baselineTotal,
                     "BaselineStatistics.fisherGreater: baselineFailures \(baselineFailures) not in 0...\(baselineTotal)")
        let population = canaryTotal + baselineTotal
        let failures = canaryFailures + baselineFailures
        let draws = canaryTotal
        let lowest = max(0, draws - (population - failures))
        let highest = min(failures, draws)
        guard canaryFailures > lowest else { return 1 }
        func logChoose(_ n: Int, _ k: Int) -> Double {
            lgamma(Double(n) + 1) - lgamma(Double(k) + 1) - lgamma(Double(n - k) + 1)
        }
        let logTotal = logChoose(population, draws)
        func logTerm(_ x: Int) -> Double {
            logChoose(failures, x) + logChoose(population - failures, draws - x) - logTotal
        }
        // The terms rise to the mode and fall after it; sum them relative to the largest
        // seen (log-sum-exp), and stop once past the mode they no longer count.
        let mode = Int(Double(draws + 1) * Double(failures + 1) / Double(population + 2))
        var largest = logTerm(canaryFailures)
        var sum = 1.0
        var x = canaryFailures + 1
        while x <= highest {
            let term = logTerm(x)
            if term > largest {
                sum = sum * exp(largest - term) + 1
                largest = term
            } else {
                let relative = exp(term - largest)
                sum += relative
                if x > mode, relative < 1e-18 { break }
            }
            x += 1
        }
        let p = exp(largest + log(sum))
        return min(max(p, 0), 1)
    }
}
