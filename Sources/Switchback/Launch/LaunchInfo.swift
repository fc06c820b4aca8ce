#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract
import CSwitchbackSDKSupport
import Synchronization
import SystemdNotify

/// What the app knows about this run: from the launcher, or, without it (`swift run`, unit
/// tests), from its own build stamp and sensible fallbacks.
public struct LaunchInfo: Sendable {
    /// A slot of the bundle.
    public enum Slot: String, Sendable {
        case current, previous
    }

    /// The slot running; nil when not under the launcher.
    public let slot: Slot?
    /// This build's version, stamped by the bundle command (`0.0.0-dev` in a plain build).
    public private(set) var version: String
    /// This build's build id: the app repository's commit the bundle command stamped
    /// (`dev` in a plain build).
    public let build: String
    /// The other slot's version; nil when not under the launcher.
    public private(set) var otherVersion: String?
    /// The launcher's state directory (absolute); nil when not under the launcher.
    public let stateDirectory: String?
    /// Where the app keeps its data: `$SWITCHBACK_DATA_DIR` if set, else `data` in the
    /// state directory, else `.switchback/data` in the working directory (development).
    /// AppVersions keeps its ledger beside it, in `<dataDirectory>.versions`.
    public internal(set) var dataDirectory: String
    /// The app's arguments: the launcher's, without the program name.
    public let arguments: [String]
    /// How this version relates to the last one that ran here (installed, upgraded from
    /// 1.0.0, ...), as AppVersions recorded it before `main`.
    public internal(set) var versionChange: ChangeState = .installed
    /// What the migrations did before `main`: the steps that ran, failed or were
    /// interrupted, and the baseline of data from before AppVersions.
    public internal(set) var migrationReport: MigrationReport?

    let link: LauncherLink
    /// What systemd or the supervisor passed in the environment (LaunchInfo+ServiceManager.swift).
    let service: ServiceEnvironment

    /// Whether the launcher started this run.
    public var isUnderLauncher: Bool { slot != nil }

    /// Tells the launcher this start is healthy, for automatic rollback: the build stops
    /// being on trial. Callable from any thread or task, any number of times: the first
    /// call records the verdict (durably, before it returns), later ones return at once.
    /// Then `READY=1` goes to `$NOTIFY_SOCKET` (from the launcher, or, without it, from the
    /// SDK, once), so systemd (`Type=notify`) or the supervisor sees the app ready once it is
    /// good. Without the launcher it records nothing.
    public func markGood() { link.markGood() }

    /// Runs `body` holding the data lock, shared (several writers) or exclusive: a
    /// rollback's downgrade, which holds it exclusively, never converts the data while
    /// `body` runs. Waits for the lock; runs `body` without it if the lock file cannot be
    /// opened (say, a read-only data directory), since a lock is no reason to refuse service.
    /// In async code the async form of this method is chosen: it does not block a thread.
    @_disfavoredOverload
    public func withDataLock<T>(exclusive: Bool = false, _ body: () throws -> T) rethrows -> T {
        let lock = DataLock(dataDirectory: dataDirectory, exclusive: exclusive, waitSeconds: nil)
        defer { withExtendedLifetime(lock) {} }
        return try body()
    }

    /// Runs `body` holding the data lock, like the synchronous form, but waits for the lock
    /// without blocking a thread of the concurrency pool (it polls every 5 ms): for an async
    /// server whose handlers write the data.
    public func withDataLock<T>(exclusive: Bool = false, _ body: () async throws -> T) async rethrows -> T {
        var lock = DataLock(dataDirectory: dataDirectory, exclusive: exclusive, waitSeconds: 0)
        while lock == nil && DataLock.isHeldElsewhere(dataDirectory: dataDirectory, exclusive: exclusive) {
            try? await Task.sleep(nanoseconds: 5_000_000)
            lock = DataLock(dataDirectory: dataDirectory, exclusive: exclusive, waitSeconds: 0)
        }
        defer { withExtendedLifetime(lock) {} }
        return try await body()
    }

    /// A launch without the launcher, for an app's unit tests (its migrations, its handlers):
    /// no slot, no state directory, this build's stamped version unless `version` is given,
    /// and the data in `dataDirectory`. No service manager either: it sends no notification
    /// and has no listeners and no watchdog, whatever the test process's environment says.
    public init(arguments: [String] = [], dataDirectory: String, version: String? = nil, otherVersion: String? = nil) {
        self.init(arguments: arguments, context: nil, service: .none)
        self.dataDirectory = dataDirectory
        if let version { self.version = version }
        self.otherVersion = otherVersion
    }

    /// The data directory convention: `$SWITCHBACK_DATA_DIR` (`override`) if set and not
    /// empty, else `data` in the state directory, else `.switchback/data` in the working directory.
    static func dataDirectory(override: String?, stateDirectory: String?) -> String {
        if let override, !override.isEmpty { return override }
        if let stateDirectory { return stateDirectory + "/data" }
        return SDKFiles.currentDirectory() + "/.switchback/data"
    }

    /// `service` is this process's environment's unless a test gives its own.
    init(arguments: [String], context: UnsafePointer<SwitchbackContext>?, service: ServiceEnvironment = .current()) {
        self.arguments = arguments
        version = String(cString: switchback_app_version())
        build = String(cString: switchback_app_build())
        self.service = service
        link = LauncherLink(context, readiness: service.notifySocket)
        if let context, switchback_context_has(context, MemoryLayout<SwitchbackContext>.offset(of: \.launcher_data)!) != 0 {
            slot = context.pointee.slot == Int32(SWITCHBACK_SLOT_PREVIOUS.rawValue) ? .previous : .current
            stateDirectory = context.pointee.state_directory.map { String(cString: $0) }
            otherVersion = context.pointee.other_slot_version.map { String(cString: $0) }
        } else {
            slot = nil
            stateDirectory = nil
            otherVersion = nil
        }
        let override = getenv("SWITCHBACK_DATA_DIR").map { String(cString: $0) }
        dataDirectory = Self.dataDirectory(override: override, stateDirectory: stateDirectory)
    }
}

/// The launcher's context and the app's good mark: one call reaches the launcher (which
/// then says `READY=1`), or, without it, one `READY=1` reaches the service manager.
final class LauncherLink: Sendable {
    private nonisolated(unsafe) let context: UnsafePointer<SwitchbackContext>?
    private let readiness: NotifySocket?
    private let state = Mutex((isMarked: false, isReadySent: false))

    init(_ context: UnsafePointer<SwitchbackContext>?, readiness: NotifySocket?) {
        self.context = context
        self.readiness = readiness
    }

    func markGood() {
        state.withLock { state in
            if !state.isMarked {
                if let context, let markGood = context.pointee.mark_good, markGood(context) == 0 {
                    state.isMarked = true
                } else if context == nil {
                    state.isMarked = true
                }
            }
            // Under the launcher, its good-mark callback says READY=1, after the verdict.
            if context == nil, !state.isReadySent {
                state.isReadySent = true
                readiness?.send("READY=1")
            }
        }
    }
}
