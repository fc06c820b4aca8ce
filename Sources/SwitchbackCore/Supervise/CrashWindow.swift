/// Counts crashes of builds that had been marked good, within a sliding window: the pure
/// part of "a good build that crashes K times within W is marked bad".
public struct CrashWindow: Sendable, Equatable {
    public let limit: Int
    public let window: Int64
    /// Crash times (milliseconds) per build, oldest first; never more than `limit` each.
    private var crashes: [String: [Int64]] = [:]

    public init(limit: Int, windowMilliseconds: Int) {
        self.limit = limit
        self.window = Int64(windowMilliseconds)
    }

    /// Records a crash of `build` at `now` (ms); true when it reached the limit within the
    /// window (the record for that build is then cleared).
    public mutating func record(build: String, at now: Int64) -> Bool {
        var times = (crashes[build] ?? []).filter { now - $0 < window }
        times.append(now)
        if times.count >= limit {
            crashes[build] = nil
            return true
        }
        crashes[build] = Array(times.suffix(limit))
        // Forget builds with nothing recent, so memory stays flat however long it runs.
        crashes = crashes.filter { $0.value.contains { now - $0 < window } }
        return false
    }

    /// Crashes of `build` counted now.
    public func count(build: String) -> Int { crashes[build]?.count ?? 0 }
}
