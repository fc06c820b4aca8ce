#if canImport(Glibc)
import Glibc
#endif

/// The clocks the analysis runs on: monotonic for intervals, real time for the deadline
/// (`--ends-at` is a Unix time in milliseconds, so a restarted supervisor can resume a window).
enum MonotonicClock {
    /// Wraps `clock_gettime(2)` with `CLOCK_MONOTONIC`, in nanoseconds.
    static func nanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// Monotonic milliseconds.
    static func milliseconds() -> Int64 { nanoseconds() / 1_000_000 }

    /// Wraps `clock_gettime(2)` with `CLOCK_REALTIME`: Unix time in milliseconds.
    static func unixMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
