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
    /// How often the persisted choice is checked when inotify is unavailable, and the
    /// longest the loop sleeps (`supervise.poll_ms`, 250).
    public var pollMilliseconds: Int
    /// The listening sockets the supervisor opens and hands to every child
    /// (`supervise.listen`); with any, a switch starts the new child before it stops the old.
    public var listen: [ListenAddress]
    /// How a child shows it is ready (`supervise.ready`, `mark`).
    public var readiness: ReadinessCheck
    /// A child not ready this long after it started is stopped and counted as a failed
    /// start (`supervise.start_deadline_ms`, 90000, systemd's TimeoutStartSec; 0: none).
    public var startDeadlineMilliseconds: Int
    /// How long a child must stay up after its ready signal to be ready
    /// (`supervise.min_ready_ms`, 0).
    public var minReadyMilliseconds: Int
    /// A ready child that does not send WATCHDOG=1 within this interval is killed and
    /// counted as a crash (`supervise.watchdog_ms`, 0: off).
    public var watchdogMilliseconds: Int
    /// How often a probe runs until the child is ready (`supervise.probe_interval_ms`, 100).
    public var probeIntervalMilliseconds: Int
    /// After a live switch, how long the old child keeps what it accepted before SIGTERM,
    /// out of the accept pool (`supervise.drain_ms`, 500): a request on a connection it
    /// accepted just before arrives and is read, so its graceful stop finishes it.
    public var drainMilliseconds: Int
    /// How often the supervisor looks at the manifest at its bundle's path for a new release
    /// installed under it (`supervise.release_check_ms`, 1000; 0: never).
    public var releaseCheckMilliseconds: Int

    public init(manifest: Manifest) {
        graceMilliseconds = manifest.milliseconds("supervise.grace_ms", default: 5000)
        backoffInitialMilliseconds = max(1, manifest.milliseconds("supervise.backoff_initial_ms", default: 100))
        backoffMaxMilliseconds = max(1, manifest.milliseconds("supervise.backoff_max_ms", default: 10_000))
        backoffResetAfterMilliseconds = manifest.milliseconds("supervise.backoff_reset_after_ms", default: 10_000)
        crashLimit = max(1, manifest.milliseconds("supervise.crash_limit", default: 3))
        crashWindowMilliseconds = manifest.milliseconds("supervise.crash_window_ms", default: 60_000)
        pollMilliseconds = max(10, min(1000, manifest.milliseconds("supervise.poll_ms", default: 250)))
        listen = manifest.settings["supervise.listen"].flatMap(ListenAddress.parseList) ?? []
        readiness = manifest.settings["supervise.ready"].flatMap(ReadinessCheck.init) ?? .mark
        startDeadlineMilliseconds = manifest.milliseconds("supervise.start_deadline_ms", default: 90_000)
        minReadyMilliseconds = manifest.milliseconds("supervise.min_ready_ms", default: 0)
        watchdogMilliseconds = manifest.milliseconds("supervise.watchdog_ms", default: 0)
        probeIntervalMilliseconds = max(10, manifest.milliseconds("supervise.probe_interval_ms", default: 100))
        drainMilliseconds = manifest.milliseconds("supervise.drain_ms", default: 500)
        releaseCheckMilliseconds = manifest.milliseconds("supervise.release_check_ms", default: 1000)
    }

    /// The sentence for a manifest whose `supervise.listen` or `supervise.ready` does not
    /// read, or nil. The supervisor refuses to start on it rather than guess.
    public static func problem(in manifest: Manifest) -> String? {
        if let text = manifest.settings["supervise.listen"] {
            guard let addresses = ListenAddress.parseList(text) else {
                return "The manifest's supervise.listen '\(text)' is not a list of [NAME=]HOST:PORT addresses; rebuild the bundle with scripts/bundle --listen HOST:PORT."
            }
            if addresses.count > 32 { return "The manifest's supervise.listen names \(addresses.count) addresses, more than 32; rebuild the bundle with fewer." }
        }
        if let text = manifest.settings["supervise.ready"], ReadinessCheck(text) == nil {
            return "The manifest's supervise.ready '\(text)' is not mark, tcp:HOST:PORT, http://LOOPBACK:PORT/PATH or command:COMMAND; rebuild the bundle with scripts/bundle --ready."
        }
        return nil
    }
}
