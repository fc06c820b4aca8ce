import Synchronization
import SystemdNotify

/// The app's own signal to a bake window (docs/analysis.md): failures it counts and an
/// explicit "bad", sent to the supervisor as sd_notify fields.
extension Switchback {
    /// The failures reported so far by this process (the supervisor hears the running total).
    private static let reportedFailures = Mutex(0)

    /// Reports one failure (a request the app could not serve, a job that failed).
    ///
    /// Under the supervisor, while the build is on probation with an `app` check, more
    /// failures than the check's `max_failures` during the window fail the analysis and roll
    /// the build back. Sends `X_SWITCHBACK_FAILURES=<total>` on `$NOTIFY_SOCKET`; without one
    /// it does nothing (systemd ignores the field). Never blocks, never throws.
    public static func reportFailure() { reportFailures(1) }

    /// Reports `count` failures at once (nothing when `count` is not positive); see ``reportFailure()``.
    public static func reportFailures(_ count: Int) { reportFailures(count, to: NotifySocket.fromEnvironment) }

    /// ``reportFailures(_:)`` to `socket` (tests give their own). Returns the total sent, or nil.
    @discardableResult
    static func reportFailures(_ count: Int, to socket: NotifySocket?) -> Int? {
        guard count > 0 else { return nil }
        let total = reportedFailures.withLock { total -> Int in
            total = total > Int.max - count ? Int.max : total + count
            return total
        }
        socket?.send("X_SWITCHBACK_FAILURES=\(total)")
        return total
    }

    /// Says this build is bad, with a reason ("database schema mismatch").
    ///
    /// Under the supervisor, while the build is on probation with an `app` check, it fails
    /// the analysis at once and the build is rolled back like a crash loop; the history shows
    /// `app: reported bad: "REASON"`. Outside a probation it changes nothing. Sends
    /// `X_SWITCHBACK_BAD=<reason on one line>` on `$NOTIFY_SOCKET`; without one it does nothing.
    public static func reportBad(_ reason: String) { reportBad(reason, to: NotifySocket.fromEnvironment) }

    /// ``reportBad(_:)`` to `socket` (tests give their own).
    static func reportBad(_ reason: String, to socket: NotifySocket?) {
        let line = reason.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).joined(separator: " ")
        socket?.send("X_SWITCHBACK_BAD=\(line.isEmpty ? "no reason given" : String(line.prefix(1000)))")
    }
}
