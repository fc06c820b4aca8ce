#if canImport(Glibc)
import Glibc
#endif

/// Runs a system call, retrying while it fails with EINTR. Returns the result and the errno
/// copied right after the call (0 on success).
@inline(__always)
func retryingInterrupts<T: BinaryInteger>(_ call: () -> T) -> (result: T, errno: Int32) {
    while true {
        let result = call()
        if result >= 0 { return (result, 0) }
        let error = Glibc.errno
        if error != EINTR { return (result, error) }
    }
}

/// The current time in seconds since the epoch.
public func currentUnixTime() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec)
}

/// Formats seconds since the epoch as "2026-11-22 03:40:12 UTC". Total: a time outside
/// `ValueRange.unixTime` (before 1970 or after year 9999, as a damaged file may hold) is
/// written "<invalid time N>" instead of trapping in the year arithmetic.
public func formatUTC(_ seconds: Int64) -> String {
    guard let parts = utcParts(seconds) else { return "<invalid time \(seconds)>" }
    return "\(parts.date) \(parts.time) UTC"
}

/// Formats seconds since the epoch as RFC 3339 ("2026-11-22T03:40:12Z"), for JSON; a time
/// outside `ValueRange.unixTime` is written "<invalid time N>", as `formatUTC` does.
public func formatRFC3339(_ seconds: Int64) -> String {
    guard let parts = utcParts(seconds) else { return "<invalid time \(seconds)>" }
    return "\(parts.date)T\(parts.time)Z"
}

/// "2026-11-22" and "03:40:12" for a time within `ValueRange.unixTime`, else nil.
private func utcParts(_ seconds: Int64) -> (date: String, time: String)? {
    guard ValueRange.unixTime.contains(seconds) else { return nil }
    var time = time_t(seconds)
    var parts = tm()
    guard gmtime_r(&time, &parts) != nil else { return nil }
    func pad(_ value: Int32, _ width: Int = 2) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    // Within the range the year is 1970...9999: none of these sums can overflow.
    return ("\(pad(parts.tm_year &+ 1900, 4))-\(pad(parts.tm_mon &+ 1))-\(pad(parts.tm_mday))",
            "\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec))")
}

/// Reads an environment variable.
public func environmentValue(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}
