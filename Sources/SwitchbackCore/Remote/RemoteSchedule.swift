#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles
import CSwitchbackSystem

/// When each install checks its remote directive, so that a fleet never polls in lockstep
/// (docs/remote.md, "Scheduling").
///
/// The marker `remote.attempt` holds the *next due time* as its mtime, so a start still
/// decides with one `stat(2)`. After every attempt the sync sets it:
///
/// - success: `interval × uniform(0.75, 1.0)` from now;
/// - the k-th failure in a row: `uniform(floor × 2^(k-1), floor × 2^k)`, capped at the
///   interval (floor = `remote.retry_floor_s`);
///
/// and the two waits of a new or restarted install: a start that finds a first check, or one
/// overdue by more than the splay, waits `uniform(0, window)` before fetching (the window is
/// `remote.first_check_s`, 30 s by default, capped by `remote.splay_s`; slept in the detached
/// sync, never in the start), and after that check succeeds the next is due
/// `interval × firstCheckFraction(r)` after the window's end: a fleet started together sends
/// its first checks at the least peaked rate the window allows (N / window a second), then
/// runs in the schedule's steady phase from the window's end on, the two never on top of
/// each other.
/// Every function here is pure: the random draw (`unit`, in [0, 1)) and the clock come in
/// as arguments; `RemoteCheckTrigger` and `recordAttempt` supply the real ones.
public enum RemoteSchedule {
    /// How long a started sync holds the marker before another start may start one
    /// (a sync that dies before recording its outcome is retried after this).
    public static let leaseMilliseconds: Int64 = 60_000

    /// What a start should do about the remote check.
    public enum Due: Sendable, Equatable {
        /// The next check is in the future.
        case notDue
        /// Due since `lateMilliseconds`; nil for a first check, or a marker too far in the
        /// future to be ours (the clock went back, or it was dated by hand).
        case due(lateMilliseconds: Int64?)
    }

    /// Whether a check is due, from the marker's time (milliseconds since the epoch; nil when
    /// there is no marker). A marker further ahead than anything this schedule ever sets
    /// (the interval plus the first check's window, or the splay plus the lease) counts as
    /// due: a clock set back by a day does not silence the checks for a day.
    public static func due(marker: Int64?, now: Int64, settings: RemoteSettings) -> Due {
        guard let marker else { return .due(lateMilliseconds: nil) }
        let horizon = max(milliseconds(settings.intervalSeconds) + firstCheckWindow(settings),
                          milliseconds(settings.splaySeconds) + leaseMilliseconds)
        let (ahead, overflow) = marker.subtractingReportingOverflow(now)
        if overflow || ahead > horizon { return .due(lateMilliseconds: nil) }
        if ahead > 0 { return .notDue }
        return .due(lateMilliseconds: -ahead)
    }

    /// The first check's window in milliseconds: `remote.first_check_s` capped by
    /// `remote.splay_s` (30 s with the defaults); 0 turns the first check's wait off.
    public static func firstCheckWindow(_ settings: RemoteSettings) -> Int64 {
        min(milliseconds(settings.firstCheckSeconds), milliseconds(settings.splaySeconds))
    }

    /// Whether a due check is a first one: no marker (or one too far ahead to be ours), or one
    /// overdue by more than the splay (the install was down), and there is a window to wait
    /// in. A check that came due while the install ran is not: the due times are spread.
    public static func isFirstCheck(_ due: Due, settings: RemoteSettings) -> Bool {
        guard case .due(let late) = due, firstCheckWindow(settings) > 0 else { return false }
        guard let late else { return true }
        return late > milliseconds(settings.splaySeconds)
    }

    /// The wait before a start's background fetch: `uniform(0, window)` for a first check
    /// (a new install, one restarted after being down, a fleet started together), none
    /// otherwise. Uniform is the least peaked way to put N first checks into the window: N /
    /// window a second, which no local draw can beat (docs/remote.md, "The two waits").
    public static func startDelay(_ due: Due, settings: RemoteSettings, unit: Double) -> Int64 {
        guard isFirstCheck(due, settings: settings) else { return 0 }
        return Int64(Double(firstCheckWindow(settings)) * clamp(unit))
    }

    /// How long after a successful first check the next one is due, in milliseconds: from the
    /// end of the first check's window (`windowEnd`, milliseconds since the epoch; now if that
    /// has passed, and never more than one window from now), `interval × firstCheckFraction(unit)`.
    /// The window's end is the same instant for a fleet started together, so from then on the
    /// fleet is where a long-running one would be, asking at the steady rate, and none of these
    /// second checks falls inside the window on top of the first checks.
    public static func delayAfterFirstCheck(now: Int64, windowEnd: Int64, settings: RemoteSettings, unit: Double) -> Int64 {
        let from = min(max(now, windowEnd), now + firstCheckWindow(settings))
        return from - now + Int64(Double(milliseconds(settings.intervalSeconds)) * firstCheckFraction(unit))
    }

    /// The shortest wait after a success, as a fraction of the interval.
    public static let successJitterLow = 0.75

    /// Where in an interval the check after a first one falls, in [0, 1]: the stationary
    /// residual wait of the schedule's own renewal process (waits uniform in [0.75, 1]
    /// intervals), by its inverse distribution function. Density 1/0.875 on [0, 0.75], then
    /// falling linearly to 0 at 1. A fleet whose checks start from one instant with this draw
    /// is at once in the state a long-running fleet reaches: requests at the steady rate
    /// `N / (0.875 × interval)`, with no wave when their successors arrive (a uniform draw
    /// gives a rate of up to twice N / interval then).
    public static func firstCheckFraction(_ unit: Double) -> Double {
        let u = clamp(unit)
        let low = successJitterLow
        let mean = (1 + low) / 2
        let flat = low / mean  // the probability of the flat part
        if u < flat { return u / flat * low }
        let v = min(1, (u - flat) / (1 - flat))
        return 1 - (1 - low) * (1 - v).squareRoot()
    }

    /// How long after an attempt the next check is due, in milliseconds. `consecutiveFailures`
    /// counts this failure too (a failure with a count of 0 is treated as the first).
    public static func nextDelay(failed: Bool, consecutiveFailures: Int, settings: RemoteSettings, unit: Double) -> Int64 {
        let interval = Double(milliseconds(settings.intervalSeconds))
        let floor = Double(milliseconds(settings.retryFloorSeconds))
        let u = clamp(unit)
        guard failed, floor < interval else { return Int64(interval * (successJitterLow + (1 - successJitterLow) * u)) }
        // floor × 2^k and floor × 2^(k-1), capped at the interval, by doubling: pow(2, k)
        // would link libm's exp2@GLIBC_2.29 into the launcher, one more version node for the
        // dynamic loader to allocate at every start.
        let failures = min(max(1, consecutiveFailures), 62)
        var low = floor
        for _ in 1..<failures where low < interval { low *= 2 }
        let high = min(interval, low * 2)
        low = min(low, high)
        return Int64(low + (high - low) * u)
    }

    /// A uniform draw in [0, 1) from `switchback_random64` (getrandom(2)).
    public static func randomUnit() -> Double {
        Double(switchback_random64() >> 11) / Double(UInt64(1) << 53)
    }

    /// The current time in milliseconds since the epoch.
    public static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// After a sync: sets the next due time (success: the interval with splay; failure: the
    /// backoff) on the marker, and refreshes what the install exports for monitoring
    /// (docs/monitoring.md). `consecutiveFailures` is the record's count after this attempt
    /// (sync keeps it: 0 after an authentic answer, one more otherwise). `firstCheckWindowEnd`
    /// is set when this was a first check (the launcher passes its window's end to the sync):
    /// a success then draws the next due time with `delayAfterFirstCheck`. Returns the due time
    /// in milliseconds, or nil when the marker could not be written (the next start then
    /// checks again: never fewer checks, only more).
    @discardableResult
    public static func recordAttempt(in directory: StateDirectory, manifest: Manifest, failed: Bool,
                                     consecutiveFailures: Int?, firstCheckWindowEnd: Int64? = nil) -> Int64? {
        let now = nowMilliseconds()
        let delay = if !failed, let firstCheckWindowEnd {
            delayAfterFirstCheck(now: now, windowEnd: firstCheckWindowEnd, settings: manifest.remote, unit: randomUnit())
        } else {
            nextDelay(failed: failed, consecutiveFailures: consecutiveFailures ?? (failed ? 1 : 0),
                      settings: manifest.remote, unit: randomUnit())
        }
        let at = now + delay
        let written = setMarker(in: directory, to: at)
        Observer.checkRecorded(in: directory, manifest: manifest)
        return written ? at : nil
    }

    /// Sets the marker's mtime to `at` (milliseconds since the epoch), creating it.
    @discardableResult
    public static func setMarker(in directory: StateDirectory, to at: Int64) -> Bool {
        // Through the checked state directory, never through a link (the file layer).
        let (parent, name) = FileSystem.split(RemoteCheckTrigger.markerPath(in: directory))
        guard let opened = try? FileSystem.directory(parent, what: "state directory", creating: true),
              let fd = (try? opened.openFile(name, flags: O_WRONLY | O_CREAT, what: "remote check marker")) ?? nil else { return false }
        defer { close(fd) }
        let time = timespec(tv_sec: Int(at / 1000), tv_nsec: Int(at % 1000) * 1_000_000)
        var times = [time, time]
        return futimens(fd, &times) == 0
    }

    /// The marker's time in milliseconds since the epoch, nil when there is none: one `stat(2)`.
    public static func markerTime(in directory: StateDirectory) -> Int64? {
        var info = stat()
        guard stat(RemoteCheckTrigger.markerPath(in: directory), &info) == 0 else { return nil }
        return Int64(info.st_mtim.tv_sec) &* 1000 &+ Int64(info.st_mtim.tv_nsec) / 1_000_000
    }

    static func milliseconds(_ seconds: Int64) -> Int64 { max(0, seconds) &* 1000 }
    static func clamp(_ unit: Double) -> Double { unit.isNaN ? 0 : min(max(unit, 0), 1) }
}
