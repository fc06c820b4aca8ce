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

    @Test func defaultsAreAnHourWithAnHourOfSplayAndAThirtySecondFloor() {
        #expect(defaults.intervalSeconds == 3600)
        #expect(defaults.splaySeconds == 3600)
        #expect(defaults.retryFloorSeconds == 30)
        #expect(Self.settings(["remote.interval_s": "60"]).splaySeconds == 60)
        #expect(Self.settings(["remote.interval_s": "60", "remote.splay_s": "0"]).splaySeconds == 0)
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
    }

    @Test func onlyAFirstOrLongOverdueCheckWaitsBeforeFetching() {
        let window: Int64 = 3_600_000
        #expect(RemoteSchedule.startDelay(.notDue, settings: defaults, unit: 0.5) == 0)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: 0), settings: defaults, unit: 0.5) == 0)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: window), settings: defaults, unit: 0.5) == 0)
        // 0.5 of the draw is inside the flat part (6/7 of it): 0.5 × 7/6 × 0.75 of the window.
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: window + 1), settings: defaults, unit: 0.5) == 1_575_000)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: defaults, unit: 0) == 0)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: defaults, unit: 1) == window)
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: defaults, unit: 6.0 / 7) == 2_700_000)
        let off = Self.settings(["remote.splay_s": "0"])
        #expect(RemoteSchedule.startDelay(.due(lateMilliseconds: nil), settings: off, unit: 0.9) == 0)
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
}

