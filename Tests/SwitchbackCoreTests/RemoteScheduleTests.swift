import SwitchbackCore
import SwitchbackTestSupport
import Testing

/// The remote check's schedule (docs/remote.md, "Scheduling"): pure functions of the
/// settings, the clock and a uniform draw.
struct RemoteScheduleTests {
    static func settings(_ pairs: [String: String] = [:]) -> RemoteSettings {
        var text = KeyValueText()
        text.append("remote.url", "https://example.com/directive.json")
        for (key, value) in pairs.sorted(by: { $0.key < $1.key }) { text.append(key, value) }
        let slot = Manifest.SlotRecord(version: "1.0.0", build: "b", abiStamp: "s", size: 1, sha256: String(repeating: "0", count: 64))
        return Manifest(appID: "com.example.test", current: slot, previous: slot, settings: text).remote
    }

    let defaults = settings()
    let now: Int64 = 1_795_317_164_000

    @Test func keysAreTheCommaSeparatedListWithoutWhitespaceOrEmptyEntries() {
        #expect(defaults.keys == [])
        let settings = Self.settings(["remote.keys": " MCowBQ== ,,MCow\tBQYD ,"])
        #expect(settings.keysText == " MCowBQ== ,,MCow\tBQYD ,")
        #expect(settings.keys == ["MCowBQ==", "MCowBQYD"])
        #expect(settings.keyPEMs == ["-----BEGIN PUBLIC KEY-----\nMCowBQ==\n-----END PUBLIC KEY-----\n",
                                     "-----BEGIN PUBLIC KEY-----\nMCowBQYD\n-----END PUBLIC KEY-----\n"])
    }

    @Test func defaultsAreAnHourWithAnHourOfSplayAThirtySecondFloorAndAThirtySecondFirstCheck() {
        #expect(defaults.intervalSeconds == 3600)
        #expect(defaults.splaySeconds == 3600)
        #expect(defaults.retryFloorSeconds == 30)
        #expect(defaults.firstCheckSeconds == 30)
        #expect(RemoteSchedule.firstCheckWindow(defaults) == 30_000)
        #expect(Self.settings(["remote.interval_s": "60"]).splaySeconds == 60)
        #expect(Self.settings(["remote.interval_s": "60", "remote.splay_s": "0"]).splaySeconds == 0)
        // The window is capped by the splay; 0 either way turns the wait off.
        #expect(RemoteSchedule.firstCheckWindow(Self.settings(["remote.splay_s": "8"])) == 8_000)
        #expect(RemoteSchedule.firstCheckWindow(Self.settings(["remote.first_check_s": "600"])) == 600_000)
        #expect(RemoteSchedule.firstCheckWindow(Self.settings(["remote.first_check_s": "7200"])) == 3_600_000)
        #expect(RemoteSchedule.firstCheckWindow(Self.settings(["remote.splay_s": "0"])) == 0)
        #expect(RemoteSchedule.firstCheckWindow(Self.settings(["remote.first_check_s": "0"])) == 0)
    }

    @Test func aSuccessfulCheckIsDueBetweenThreeQuartersOfTheIntervalAndTheInterval() {
        #expect(RemoteSchedule.nextDelay(failed: false, consecutiveFailures: 0, settings: defaults, unit: 0) == 2_700_000)
        #expect(RemoteSchedule.nextDelay(failed: false, consecutiveFailures: 0, settings: defaults, unit: 0.5) == 3_150_000)
        #expect(RemoteSchedule.nextDelay(failed: false, consecutiveFailures: 0, settings: defaults, unit: 0.999_999_9) <= 3_600_000)
        // Draws outside [0, 1) are clamped, never a delay outside the bounds.
        #expect(RemoteSchedule.nextDelay(failed: false, consecutiveFailures: 0, settings: defaults, unit: 7) == 3_600_000)
        #expect(RemoteSchedule.nextDelay(failed: false, consecutiveFailures: 0, settings: defaults, unit: -1) == 2_700_000)
        #expect(RemoteSchedule.nextDelay(failed: false, consecutiveFailures: 0, settings: defaults, unit: .nan) == 2_700_000)
    }

    @Test func realDrawsSpreadOverTheWholeWindow() {
        let delays = (0..<2000).map { _ in
            RemoteSchedule.nextDelay(failed: false, consecutiveFailures: 0, settings: defaults, unit: RemoteSchedule.randomUnit())
        }
        #expect(delays.allSatisfy { (2_700_000...3_600_000).contains($0) })
        // Each tenth of the window gets some (2000 draws: about 200 each).
        let tenths = Set(delays.map { ($0 - 2_700_000) / 90_000 })
        #expect(tenths.isSuperset(of: Set(0..<10)))
    }

    @Test func failuresBackOffExponentiallyFromTheFloorToTheInterval() {
        func range(_ failures: Int) -> ClosedRange<Int64> {
            RemoteSchedule.nextDelay(failed: true, consecutiveFailures: failures, settings: defaults, unit: 0)
                ... RemoteSchedule.nextDelay(failed: true, consecutiveFailures: failures, settings: defaults, unit: 1)
        }
        #expect(range(1) == 30_000...60_000)
        #expect(range(2) == 60_000...120_000)
        #expect(range(3) == 120_000...240_000)
        #expect(range(7) == 1_920_000...3_600_000)
        // The cap: never longer than the interval, however many failures.
        #expect(range(8) == 3_600_000...3_600_000)
        #expect(range(1_000_000) == 3_600_000...3_600_000)
        // A failure whose count was not kept is the first one.
        #expect(range(0) == range(1))
    }

    @Test func aFloorAtOrAboveTheIntervalRetriesLikeASuccess() {
        let short = Self.settings(["remote.interval_s": "20", "remote.retry_floor_s": "30"])
        for unit in [0.0, 0.5, 1.0] {
            #expect(RemoteSchedule.nextDelay(failed: true, consecutiveFailures: 3, settings: short, unit: unit)
                    == RemoteSchedule.nextDelay(failed: false, consecutiveFailures: 0, settings: short, unit: unit))
        }
        let zero = Self.settings(["remote.interval_s": "0"])
        #expect(RemoteSchedule.nextDelay(failed: true, consecutiveFailures: 5, settings: zero, unit: 0.5) == 0)
    }

    @Test func aMarkerInTheFutureIsNotDueUnlessTheClockWentBack() {
        #expect(RemoteSchedule.due(marker: nil, now: now, settings: defaults) == .due(lateMilliseconds: nil))
        #expect(RemoteSchedule.due(marker: now + 1, now: now, settings: defaults) == .notDue)
        #expect(RemoteSchedule.due(marker: now + 3_600_000, now: now, settings: defaults) == .notDue)
        #expect(RemoteSchedule.due(marker: now, now: now, settings: defaults) == .due(lateMilliseconds: 0))
        #expect(RemoteSchedule.due(marker: now - 5000, now: now, settings: defaults) == .due(lateMilliseconds: 5000))
        // Further ahead than anything the schedule sets: the clock went back (or `touch -d`).
        // (The horizon is the splay, an interval by default, plus the sync's 60-second lease.)
        #expect(RemoteSchedule.due(marker: now + 3_660_000, now: now, settings: defaults) == .notDue)
        #expect(RemoteSchedule.due(marker: now + 3_660_001, now: now, settings: defaults) == .due(lateMilliseconds: nil))
        #expect(RemoteSchedule.due(marker: Int64.max, now: now, settings: defaults) == .due(lateMilliseconds: nil))
        #expect(RemoteSchedule.due(marker: Int64.min, now: now, settings: defaults) == .due(lateMilliseconds: nil))
        // A claimed marker (splay plus lease) is ours even when that is past the interval.
        let small = Self.settings(["remote.interval_s": "10", "remote.splay_s": "100"])
        #expect(RemoteSchedule.due(marker: now + 150_000, now: now, settings: small) == .notDue)
        // So is the due time after a first check: up to a window, then up to an interval.
        let wide = Self.settings(["remote.first_check_s": "600"])
        #expect(RemoteSchedule.due(marker: now + 4_200_000, now: now, settings: wide) == .notDue)
        #expect(RemoteSchedule.due(marker: now + 4_200_001, now: now, settings: wide) == .due(lateMilliseconds: nil))
    }

    @Test func onlyAFirstOrLongOverdueCheckWaitsAndNoLongerThanThirtySeconds() {
        let splay: Int64 = 3_600_000
        #expect(!RemoteSchedule.isFirstCheck(.notDue, settings: defaults))
        #expect(RemoteSchedule.startDelay(.notDue, settings: defaults, unit: 0.5) == 0)
        // Came due while the install ran, or overdue by at most the splay: at once.
        #expect(!RemoteSchedule.isFirstCheck(.due(lateMilliseconds: 0), settings: defaults))
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: 0), settings: defaults, unit: 0.5) == 0)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: splay), settings: defaults, unit: 0.5) == 0)
        // Overdue by more (the install was down), or no marker (a new install): uniform over
        // the 30-second window, whatever the splay.
        #expect(RemoteSchedule.isFirstCheck(.due(lateMilliseconds: splay + 1), settings: defaults))
        #expect(RemoteSchedule.isFirstCheck(.due(lateMilliseconds: nil), settings: defaults))
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: splay + 1), settings: defaults, unit: 0.5) == 15_000)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: defaults, unit: 0) == 0)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: defaults, unit: 0.25) == 7_500)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: defaults, unit: 1) == 30_000)
        // Draws outside [0, 1] never leave the window.
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: defaults, unit: 7) == 30_000)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: defaults, unit: .nan) == 0)
        let grid = (0...1000).map { RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: defaults, unit: Double($0) / 1000) }
        #expect(grid.allSatisfy { (0...30_000).contains($0) })
        // A smaller splay caps the window (and still says what counts as overdue).
        let short = Self.settings(["remote.splay_s": "8"])
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: short, unit: 1) == 8_000)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: 8_000), settings: short, unit: 1) == 0)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: 8_001), settings: short, unit: 0.5) == 4_000)
        // No window, no wait, and no first check: the sync draws its next due time as always.
        for off in [Self.settings(["remote.splay_s": "0"]), Self.settings(["remote.first_check_s": "0"])] {
            #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: off, unit: 0.9) == 0)
            #expect(!RemoteSchedule.isFirstCheck(.due(lateMilliseconds: nil), settings: off))
            #expect(!RemoteSchedule.isFirstCheck(.due(lateMilliseconds: 5_000_000), settings: off))
        }
    }

    @Test func theCheckAfterAFirstOneIsDrawnFromTheWindowsEndByTheStationaryWait() {
        // The window ends 10 s from now: 10 s, then the stationary draw over the interval.
        let end = now + 10_000
        #expect(RemoteSchedule.delayAfterFirstCheck(now: now, windowEnd: end, settings: defaults, unit: 0) == 10_000)
        #expect(RemoteSchedule.delayAfterFirstCheck(now: now, windowEnd: end, settings: defaults, unit: 6.0 / 7) == 10_000 + 2_700_000)
        #expect(RemoteSchedule.delayAfterFirstCheck(now: now, windowEnd: end, settings: defaults, unit: 1) == 10_000 + 3_600_000)
        // Half the draws fall in the first 0.4375 of the interval (the flat part's density, 1/0.875).
        #expect(RemoteSchedule.delayAfterFirstCheck(now: now, windowEnd: end, settings: defaults, unit: 0.5) == 10_000 + 1_575_000)
        // A window that ended already (a loaded machine started the sync late): from now.
        #expect(RemoteSchedule.delayAfterFirstCheck(now: now, windowEnd: now - 5_000, settings: defaults, unit: 0) == 0)
        // A window's end further than one window from now is not believed: never past the
        // horizon `due` trusts, so a bad argument cannot silence the checks.
        #expect(RemoteSchedule.delayAfterFirstCheck(now: now, windowEnd: Int64.max, settings: defaults, unit: 1) == 30_000 + 3_600_000)
        let delays = (0...1000).map { RemoteSchedule.delayAfterFirstCheck(now: now, windowEnd: Int64.max, settings: defaults, unit: Double($0) / 1000) }
        #expect(delays.allSatisfy { RemoteSchedule.due(marker: now + $0, now: now, settings: defaults) == .notDue })
    }

    @Test func firstChecksFollowTheScheduleStationaryDistribution() {
        // Bounds and monotony of the inverse distribution function.
        #expect(RemoteSchedule.firstCheckFraction(0) == 0)
        #expect(RemoteSchedule.firstCheckFraction(1) == 1)
        #expect(RemoteSchedule.firstCheckFraction(.nan) == 0)
        let grid = (0...1000).map { RemoteSchedule.firstCheckFraction(Double($0) / 1000) }
        #expect(zip(grid, grid.dropFirst()).allSatisfy { $0 <= $1 })
        // A fleet whose first checks follow it, then the schedule, asks at one steady rate:
        // 100,000 simulated installs, interval 1, counted in tenths of an interval over three
        // intervals; every tenth holds 1/0.875 of N/10 requests, within 5% (five standard
        // deviations). The draws come from a seeded generator, so the count is the same at
        // every run: a test of the distribution, not of luck.
        var generator = SeededGenerator(seed: 14)
        func unit() -> Double { Double(generator.next() >> 11) / Double(UInt64(1) << 53) }
        var counts = [Int](repeating: 0, count: 30)
        for _ in 0..<100_000 {
            var at = RemoteSchedule.firstCheckFraction(unit())
            while at < 3 {
                counts[Int(at * 10)] += 1
                at += 0.75 + 0.25 * unit()
            }
        }
        let steady = 100_000.0 / 10 / 0.875
        for (tenth, count) in counts.enumerated() {
            #expect(abs(Double(count) - steady) < steady * 0.05, "tenth \(tenth): \(count) requests, steady \(Int(steady))")
        }
    }

    // MARK: The herd figure of a fleet started together

    /// The first check's wait before issue 28.2, kept to measure against: `splay × r`, r from
    /// the stationary wait, the splay defaulting to the interval (an hour by default), and
    /// the check after it `interval × uniform(0.75, 1)` later, as after any success.
    static func formerStartDelay(_ due: RemoteSchedule.Due, settings: RemoteSettings, unit: Double) -> Int64 {
        guard case .due(let late) = due else { return 0 }
        let window = settings.splaySeconds * 1000
        if let late, late <= window { return 0 }
        return Int64(Double(window) * RemoteSchedule.firstCheckFraction(unit))
    }

    /// Requests per 1-second bin of `installs` installs started together at 0, every check a
    /// success, for `seconds` seconds: the schedule's pure functions, nothing else. Each
    /// install draws its schedule from a generator of its own, seeded from `seed` and its
    /// number, and the new design's first check's window from another, so both designs run on
    /// the same seeds and every install makes the same draws for the same checks in both.
    static func fleet(former: Bool, installs: Int, settings: RemoteSettings, seconds: Int, seed: UInt64) -> [Int] {
        func unit(_ generator: inout SeededGenerator) -> Double { Double(generator.next() >> 11) / Double(UInt64(1) << 53) }
        let end = Int64(seconds) * 1000
        var bins = [Int](repeating: 0, count: seconds)
        for install in 0..<UInt64(installs) {
            var steady = SeededGenerator(seed: seed &* 1_000_003 &+ install)
            var window = SeededGenerator(seed: ~(seed &* 1_000_003 &+ install))
            var at: Int64
            if former {
                at = formerStartDelay(.due(lateMilliseconds: nil), settings: settings, unit: unit(&steady))
            } else {
                let first = RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: settings, unit: unit(&window))
                if first < end { bins[Int(first / 1000)] += 1 }
                at = first + RemoteSchedule.delayAfterFirstCheck(now: first, windowEnd: RemoteSchedule.firstCheckWindow(settings),
                                                                 settings: settings, unit: unit(&steady))
            }
            while at < end {
                bins[Int(at / 1000)] += 1
                at += RemoteSchedule.nextDelay(failed: false, consecutiveFailures: 0, settings: settings, unit: unit(&steady))
            }
        }
        return bins
    }

    /// The busiest second over the mean rate, in `bins`.
    static func busiestOverMean(_ bins: ArraySlice<Int>) -> Double {
        Double(bins.max() ?? 0) / (Double(bins.reduce(0, +)) / Double(bins.count))
    }

    /// The herd figure of issue 14 and the fleet tests, for 1,000 installs started together at
    /// a 60-second interval (scripts/fleet-sim's fleet), 20 runs of 5 minutes, 1-second bins:
    /// the busiest second's share, that is its requests over the mean rate, over the fleet's
    /// steady phase, which for the former design began at the start and for this one begins at
    /// the first check's window's end (every install has checked once by then). It is no
    /// worse: the same, run for run, as the second checks are the former first checks, a
    /// window later. (A second wait drawn from each install's own first check instead would
    /// add up to N / (0.875 × interval) a second on top of the window's first checks: the
    /// bound on the window's busiest second below sees it.) The first checks themselves are the price of checking within 30 s: N / 30
    /// a second on average for 30 s, which no local draw can lower (N checks in 30 s); the
    /// test holds the busiest of those seconds to that plus four standard deviations (the
    /// design puts nothing on top of it), and prints the whole-run figures docs/remote.md
    /// quotes.
    @Test func aFleetStartedTogetherIsNoMoreHerdedThanBefore() {
        let installs = 1000, seconds = 300, runs = 20
        let settings = Self.settings(["remote.interval_s": "60"])
        let window = Int(RemoteSchedule.firstCheckWindow(settings) / 1000)
        #expect(window == 30)
        var former: [Double] = [], steady: [Double] = [], whole: [Double] = [], formerBurst: [Int] = [], burst: [Int] = []
        for run in 0..<runs {
            let before = Self.fleet(former: true, installs: installs, settings: settings, seconds: seconds + window, seed: UInt64(run))
            let after = Self.fleet(former: false, installs: installs, settings: settings, seconds: seconds + window, seed: UInt64(run))
            former.append(Self.busiestOverMean(before[0..<seconds]))
            steady.append(Self.busiestOverMean(after[window..<(window + seconds)]))
            whole.append(Self.busiestOverMean(after[0..<seconds]))
            formerBurst.append(before[0..<window].max() ?? 0)
            burst.append(after[0..<window].max() ?? 0)
        }
        func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(values.count) }
        func shown(_ values: [Double]) -> String { String(format: "%.2f (worst %.2f)", mean(values), values.max() ?? 0) }
        print("RemoteScheduleTests: busiest second / mean, steady phase: before \(shown(former)), after \(shown(steady)); "
              + "5 minutes from the start: before the same, after \(shown(whole)); "
              + "busiest second of the first \(window) s: before \(Double(formerBurst.reduce(0, +)) / Double(runs)) on average, at most \(formerBurst.max() ?? 0), "
              + "after \(Double(burst.reduce(0, +)) / Double(runs)) on average, at most \(burst.max() ?? 0)")
        #expect(mean(steady) <= mean(former), "the herd figure got worse: \(shown(steady)) against \(shown(former))")
        #expect((steady.max() ?? 0) <= (former.max() ?? 0))
        let rate = Double(installs) / Double(window)
        for (run, busiest) in burst.enumerated() {
            #expect(Double(busiest) >= rate, "run \(run): \(busiest) in the busiest first second, below N / window")
            #expect(Double(busiest) <= rate + 4 * rate.squareRoot(), "run \(run): \(busiest) in the busiest first second")
        }
    }
}
