#if canImport(Glibc)
import Glibc
#endif
import SwitchbackSystem

/// How a start keeps the remote directive fresh without linking networking: it runs
/// `bin/rollbackctl-remote sync`, which does the fetching.
///
/// By default the start never waits: when the last attempt is older than `remote.interval_s`
/// (one `stat(2)` of `remote.attempt`), the marker is touched and the sync is started fully
/// detached; its result takes effect at the next start (at once under the supervisor, which
/// watches the state file). With `remote.check_before_start=true` the start runs the sync and
/// waits for it, bounded by `remote.before_start_deadline_ms`.
public struct RemoteCheckTrigger: Sendable {
    let settings: RemoteSettings
    let directory: StateDirectory
    let bundleRoot: String

    /// Nil when the manifest names no directive URL.
    public init?(manifest: Manifest, directory: StateDirectory, bundleRoot: String) {
        guard let url = manifest.settings["remote.url"], !url.isEmpty else { return nil }  // the common case: one lookup
        self.settings = manifest.remote
        self.directory = directory
        self.bundleRoot = bundleRoot
    }

    /// The marker whose mtime is the last attempt's time: rate limit at one `stat`.
    public var markerPath: String { Self.markerPath(in: directory) }
    /// The same, for any state directory.
    public static func markerPath(in directory: StateDirectory) -> String { directory.path + "/remote.attempt" }
    /// Held by the one sync that may run at a time (`flock`, non-blocking for background syncs).
    public static func syncLockPath(in directory: StateDirectory) -> String { directory.path + "/sync.lock" }
    /// The program that fetches: beside the launcher in `bin/`.
    public var programPath: String { bundleRoot + "/bin/rollbackctl-remote" }

    /// Whether the last attempt is older than the interval (or there was none). A marker in
    /// the future by more than the interval (the clock went back) counts as old.
    public func isDue(now: Int64 = currentUnixTime()) -> Bool {
        var info = stat()
        guard stat(markerPath, &info) == 0 else { return true }
        // A marker dated anywhere (touch -d) must not overflow the subtraction: that is due too.
        let (age, overflow) = now.subtractingReportingOverflow(Int64(info.st_mtim.tv_sec))
        return overflow || age >= settings.intervalSeconds || age < -settings.intervalSeconds
    }

    /// Sets the marker's mtime to now (creating it), so no other start triggers a sync
    /// within the interval. Returns false when the state directory cannot be written.
    @discardableResult
    public func touchMarker() -> Bool { Self.touchMarker(in: directory) }

    /// The same, for any state directory (`rollbackctl sync` touches it too: a manual check
    /// counts as an attempt).
    @discardableResult
    public static func touchMarker(in directory: StateDirectory) -> Bool {
        _ = try? FileSystem.createDirectory(directory.path)
        let fd = open(markerPath(in: directory), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 { return false }
        defer { close(fd) }
        return futimens(fd, nil) == 0
    }

    /// When due: touches the marker and starts `rollbackctl-remote sync --background`
    /// detached (it exits at once if another sync holds the sync lock). Never waits for the
    /// network. Returns a sentence when the sync could not be started.
    @discardableResult
    public func startInBackgroundIfDue() -> String? {
        guard isDue(), touchMarker() else { return nil }
        guard access(programPath, X_OK) == 0 else {
            return "cannot check the remote directive: \(programPath) is missing; rebuild the bundle with scripts/bundle."
        }
        let result = withCArguments(["sync", "--background"]) { argv in
            switchback_spawn_detached(programPath, argv, environ)
        }
        return result == 0 ? nil : "cannot start \(programPath): \(errorString(result))."
    }

    /// Runs `rollbackctl-remote sync` with the before-start deadline and waits for it (killing
    /// it if it overstays by more than a second). Touches the marker first.
    public func runBeforeStart() {
        touchMarker()
        guard access(programPath, X_OK) == 0 else { return }
        let deadline = settings.beforeStartDeadlineMilliseconds
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pid: pid_t = 0
        let result = withCArguments(["sync", "--background", "--deadline-ms", String(deadline)]) { argv in
            posix_spawn(&pid, programPath, &actions, nil, argv, environ)
        }
        guard result == 0 else { return }
        let giveUpAt = monotonicNow() + Double(deadline) / 1000 + 1
        var status: Int32 = 0
        while true {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid || (done < 0 && errno != EINTR) { return }
            if monotonicNow() >= giveUpAt {
                kill(pid, SIGKILL)
                _ = retryingInterrupts { waitpid(pid, &status, 0) }
                return
            }
            var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
            nanosleep(&pause, nil)
        }
    }

    /// Calls `body` with a NULL-terminated argv: the program, `--state-dir`, `--bundle`, then `arguments`.
    private func withCArguments<T>(_ arguments: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
        withCStrings([programPath, "--state-dir", directory.path, "--bundle", bundleRoot] + arguments, body)
    }
}
