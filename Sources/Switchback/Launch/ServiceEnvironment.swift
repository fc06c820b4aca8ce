#if canImport(Glibc)
import Glibc
#endif
import SystemdNotify

/// What the service manager (systemd, or Switchback's supervisor, which follows systemd's
/// conventions) put in this process's environment: where notifications go, which listening
/// sockets it passed, and how often the watchdog expects a ping.
struct ServiceEnvironment: Sendable {
    var notifySocket: NotifySocket?
    var listeners: [LaunchInfo.Listener]
    var watchdogInterval: Duration?

    /// No service manager: an app's unit test.
    static let none = ServiceEnvironment(notifySocket: nil, listeners: [], watchdogInterval: nil)

    /// The variables that matter.
    static let names = ["NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID"]

    init(notifySocket: NotifySocket?, listeners: [LaunchInfo.Listener], watchdogInterval: Duration?) {
        self.notifySocket = notifySocket
        self.listeners = listeners
        self.watchdogInterval = watchdogInterval
    }

    /// Reads `environment` as the process `processID` sees it, as libsystemd's
    /// `sd_listen_fds_with_names` and `sd_watchdog_enabled` do: listeners only when
    /// `LISTEN_PID` is this process, a watchdog only when `WATCHDOG_PID` is unset or this process.
    init(environment: [String: String], processID: Int32) {
        notifySocket = environment["NOTIFY_SOCKET"].flatMap(NotifySocket.init(name:))
        listeners = Self.listeners(environment, processID: processID)
        watchdogInterval = Self.watchdogInterval(environment, processID: processID)
    }

    /// This process's, with close-on-exec set on the inherited listeners as
    /// `sd_listen_fds` sets it, so a program the app spawns does not keep them open.
    static func current() -> ServiceEnvironment {
        var environment: [String: String] = [:]
        for name in names {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        guard !environment.isEmpty else { return .none }
        var service = ServiceEnvironment(environment: environment, processID: getpid())
        // A descriptor that is not open is no listener.
        service.listeners = service.listeners.filter { listener in
            let flags = fcntl(listener.fileDescriptor, F_GETFD)
            return flags >= 0 && fcntl(listener.fileDescriptor, F_SETFD, flags | FD_CLOEXEC) == 0
        }
        return service
    }

    /// `LISTEN_FDS` descriptors from 3 (`SD_LISTEN_FDS_START`), named by `LISTEN_FDNAMES`
    /// (colon-separated; `unknown` for a missing or empty name, as systemd names them).
    static func listeners(_ environment: [String: String], processID: Int32) -> [LaunchInfo.Listener] {
        guard let owner = environment["LISTEN_PID"].flatMap(decimal), owner == UInt64(processID),
              let count = environment["LISTEN_FDS"].flatMap(decimal), count > 0, count <= UInt64(Int32.max - 3)
        else { return [] }
        let names = environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false) } ?? []
        return (0..<Int(count)).map { index in
            let name = index < names.count && !names[index].isEmpty ? String(names[index]) : "unknown"
            return LaunchInfo.Listener(name: name, fileDescriptor: 3 + Int32(index))
        }
    }

    /// `WATCHDOG_USEC` microseconds, when positive and `WATCHDOG_PID` is unset or this process.
    static func watchdogInterval(_ environment: [String: String], processID: Int32) -> Duration? {
        guard let microseconds = environment["WATCHDOG_USEC"].flatMap(decimal), microseconds > 0,
              microseconds <= UInt64(Int64.max) else { return nil }
        if let owner = environment["WATCHDOG_PID"] {
            guard decimal(owner) == UInt64(processID) else { return nil }
        }
        return .microseconds(Int64(microseconds))
    }

    /// A non-negative decimal number, digits only.
    private static func decimal(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return UInt64(text)
    }

    /// `duration` in whole microseconds, at least 0, at most `UInt64.max`.
    static func microseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, !(seconds == 0 && attoseconds <= 0) else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return .max }
        let (total, carry) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000_000))
        return carry ? .max : total
    }
}
