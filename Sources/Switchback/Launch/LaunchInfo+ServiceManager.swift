// What the app tells its service manager (systemd, or Switchback's supervisor, which speaks
// systemd's protocol) beyond markGood()'s READY=1, and what it was given. Every notification
// goes to $NOTIFY_SOCKET; without one nothing is sent and the call returns false.
extension LaunchInfo {
    /// A listening socket the service manager passed to this process.
    public struct Listener: Sendable, Equatable {
        /// Its name from `LISTEN_FDNAMES` (systemd's `FileDescriptorName=`), or `unknown`.
        public let name: String
        /// The descriptor: the app owns it, and close-on-exec is set.
        public let fileDescriptor: Int32
    }

    /// The listening sockets the service manager passed (`LISTEN_FDS` descriptors from 3,
    /// named by `LISTEN_FDNAMES`), in order, for a server that can take a descriptor instead of
    /// binding its address. Empty unless `LISTEN_PID` is this process.
    public var listeners: [Listener] { service.listeners }

    /// How often the service manager's watchdog expects ``notifyWatchdog()`` (`WATCHDOG_USEC`);
    /// nil when no watchdog watches this process (unset, 0, or `WATCHDOG_PID` another process).
    public var watchdogInterval: Duration? { service.watchdogInterval }

    /// Asks the service manager for `duration` more to start, counted from now: sends
    /// `EXTEND_TIMEOUT_USEC=<µs>`, for a start that is slow but progressing. Returns whether
    /// it was sent; a zero or negative duration sends nothing.
    @discardableResult
    public func extendStartDeadline(by duration: Duration) -> Bool {
        let microseconds = ServiceEnvironment.microseconds(duration)
        guard microseconds > 0, let socket = service.notifySocket else { return false }
        return socket.send("EXTEND_TIMEOUT_USEC=\(microseconds)")
    }

    /// Tells the watchdog this process is alive: sends `WATCHDOG=1`. Call it at least every
    /// ``watchdogInterval`` (a third of it leaves room for a late wake-up). Returns whether
    /// it was sent.
    @discardableResult
    public func notifyWatchdog() -> Bool {
        service.notifySocket?.send("WATCHDOG=1") ?? false
    }
}
