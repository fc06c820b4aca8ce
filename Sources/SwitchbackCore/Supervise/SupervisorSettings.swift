/// Supervise mode's knobs, from the manifest (milliseconds unless named otherwise).
public struct SupervisorSettings: Sendable, Equatable {
    /// How long a child gets between SIGTERM and SIGKILL (`supervise.grace_ms`, 5000).
    public var graceMilliseconds: Int
    /// The first restart delay (`supervise.backoff_initial_ms`, 100); doubles after every
    /// abnormal exit up to `supervise.backoff_max_ms` (10000).
    public var backoffInitialMilliseconds: Int
    public var backoffMaxMilliseconds: Int
    /// A child that ran this long resets the delay (`supervise.backoff_reset_after_ms`, 10000).
    public var backoffResetAfterMilliseconds: Int
    /// A good build that crashes this many times (`supervise.crash_limit`, 3) within the window
    /// (`supervise.crash_window_ms`, 60000) is marked bad.
    public var crashLimit: Int
    public var crashWindowMilliseconds: Int
    /// How often the persisted choice is checked (`supervise.poll_ms`, 250).
    public var pollMilliseconds: Int

    public init(manifest: Manifest) {
        graceMilliseconds = manifest.milliseconds("supervise.grace_ms", default: 5000)
        backoffInitialMilliseconds = max(1, manifest.milliseconds("supervise.backoff_initial_ms", default: 100))
        backoffMaxMilliseconds = max(1, manifest.milliseconds("supervise.backoff_max_ms", default: 10_000))
        backoffResetAfterMilliseconds = manifest.milliseconds("supervise.backoff_reset_after_ms", default: 10_000)
        crashLimit = max(1, manifest.milliseconds("supervise.crash_limit", default: 3))
        crashWindowMilliseconds = manifest.milliseconds("supervise.crash_window_ms", default: 60_000)
        pollMilliseconds = max(10, min(1000, manifest.milliseconds("supervise.poll_ms", default: 250)))
    }
}
