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

/// Formats seconds since the epoch as "2026-11-22 03:40:12 UTC".
public func formatUTC(_ seconds: Int64) -> String {
    var time = time_t(seconds)
    var parts = tm()
    gmtime_r(&time, &parts)
    func pad(_ value: Int32, _ width: Int = 2) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday)) "
        + "\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)) UTC"
}

/// Formats seconds since the epoch as RFC 3339 ("2026-11-22T03:40:12Z"), for JSON.
public func formatRFC3339(_ seconds: Int64) -> String {
    let text = formatUTC(seconds)
    return String(text.prefix(10)) + "T" + String(text.dropFirst(11).prefix(8)) + "Z"
}

/// Reads an environment variable.
public func environmentValue(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}
