#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// How a start keeps the remote directive fresh without linking networking: it runs
/// `bin/rollbackctl-remote sync`, which does the fetching.
///
/// The marker `remote.attempt` holds the next due time as its mtime (`RemoteSchedule`), so a
/// start that has nothing to do costs one `stat(2)`. By default the start never waits: when
/// a check is due, the marker is claimed for the sync's lease and the sync is started fully
/// detached, after a random wait when the check is a first one or long overdue; its result
/// takes effect at the next start (at once under the supervisor, which watches the state
/// file). With `remote.check_before_start=true` a start whose check is due runs the sync and
/// waits for it, bounded by `remote.before_start_deadline_ms`; one that is not due does not.
public struct RemoteCheckTrigger: Sendable {
    let settings: RemoteSettings
    let directory: StateDirectory
    let bundleRoot: String
    /// The current slot's version: a directive file is judged again after an upgrade.
    let currentVersion: String

    /// Nil when the manifest names no directive URL.
    public init?(manifest: Manifest, directory: StateDirectory, bundleRoot: String) {
        guard let url = manifest.settings["remote.url"], !url.isEmpty else { return nil }  // the common case: one lookup
        self.settings = manifest.remote
        self.directory = directory
        self.bundleRoot = bundleRoot
        currentVersion = manifest.current.version
    }

    /// The marker whose mtime is the next check's due time.
    public var markerPath: String { Self.markerPath(in: directory) }
    /// The same, for any state directory.
    public static func markerPath(in directory: StateDirectory) -> String { directory.path + "/remote.attempt" }
    /// Held by the one sync that may run at a time (`flock`, non-blocking for background syncs).
    public static func syncLockPath(in directory: StateDirectory) -> String { directory.path + "/sync.lock" }
    /// The program that fetches: beside the launcher in `bin/`.
    public var programPath: String { bundleRoot + "/bin/rollbackctl-remote" }

    /// Opens and checks the program as a slot is checked (`ProgramFile.open`): it runs as
    /// whoever runs the launcher, root included. Throws a sentence naming the file and why.
    func openProgram() throws(SwitchbackError) -> ProgramFile {
        try ProgramFile.open(programPath, what: "rollbackctl-remote program")
    }

    /// What the launcher says when the program is refused: the refusal, then its effect.
    static func refusal(_ error: SwitchbackError) -> String {
        "\(error.message) The remote directive was not checked."
    }

    /// Whether a check is due (one `stat` of the marker); see `RemoteSchedule.due`.
    public func due(now: Int64 = RemoteSchedule.nowMilliseconds()) -> RemoteSchedule.Due {
        RemoteSchedule.due(marker: RemoteSchedule.markerTime(in: directory), now: now, settings: settings)
    }

    /// Whether a check is due now.
    public func isDue() -> Bool { due() != .notDue }

    /// Claims the marker for a sync's lease (creating it), so no other start triggers a sync
    /// meanwhile. Returns false when the state directory cannot be written.
    @discardableResult
    public func touchMarker() -> Bool { Self.touchMarker(in: directory) }

    /// The same, for any state directory (`rollbackctl sync` calls it once it holds the sync
    /// lock: the sync then sets the real due time with `RemoteSchedule.recordAttempt`).
    @discardableResult
    public static func touchMarker(in directory: StateDirectory, extraMilliseconds: Int64 = 0) -> Bool {
        RemoteSchedule.setMarker(in: directory, to: RemoteSchedule.nowMilliseconds() + extraMilliseconds + RemoteSchedule.leaseMilliseconds)
    }

    /// When due: claims the marker and starts `rollbackctl-remote sync --background` detached
    /// (it exits at once if another sync holds the sync lock), after the first check's random
    /// wait when the check is a first one or long overdue (then with
    /// `--window-end`, so that the sync draws the next due time from the window's
    /// end). Never waits for the network. The program is checked (`ProgramFile`) and run from
    /// the descriptor that was checked. Returns a sentence when the sync could not be started,
    /// or the program was refused.
    @discardableResult
    public func startInBackgroundIfDue() -> String? {
        let now = RemoteSchedule.nowMilliseconds()
        let due = due(now: now)
        guard due != .notDue else { return nil }
        let first = RemoteSchedule.isFirstCheck(due, settings: settings)
        let delay = RemoteSchedule.startDelay(due, settings: settings, unit: RemoteSchedule.randomUnit())
        guard Self.touchMarker(in: directory, extraMilliseconds: delay) else { return nil }
        let program: ProgramFile
        do { program = try openProgram() } catch { return Self.refusal(error) }
        let arguments = first ? ["sync", "--background", "--window-end", String(now + RemoteSchedule.firstCheckWindow(settings))]
            : ["sync", "--background"]
        // Open until the fork has it: the detached process runs this descriptor's file.
        let result = withExtendedLifetime(program) {
            withCArguments(arguments) { argv in
                switchback_spawn_detached_after(Int(delay), 10, program.descriptor, argv, environ)
            }
        }
        return result == 0 ? nil : "cannot start \(programPath): \(errorString(result))."
    }

    /// When a check is due (one `stat`, as in the default mode): runs `rollbackctl-remote sync`
    /// with the before-start deadline and waits for it (killing it if it overstays by more than
    /// a second). Claims the marker first. Not due: returns at once. The program is checked
    /// (`ProgramFile`) and run from the descriptor that was checked; returns a sentence when
    /// it was refused.
    @discardableResult
    public func runBeforeStart() -> String? {
        guard isDue() else { return nil }
        touchMarker()
        return runAndWait()
    }

    /// A directive from a file (`remote.url=file://...`): when the file differs from the
    /// version the last sync judged (one `stat` of the file, one `readlink` of the record:
    /// `DirectiveFile`), runs the sync and waits for it, bounded as `runBeforeStart`, so this
    /// very start runs what the file says. Unchanged: returns at once, nothing else is read.
    @discardableResult
    public func syncIfFileChanged(_ path: String) -> String? {
        guard DirectiveFile.hasChanged(path, for: currentVersion, in: directory) else { return nil }
        return runAndWait()
    }

    /// Starts `rollbackctl-remote sync` as a child of this process, without waiting: the
    /// supervisor's sync of a changed directive file (it reaps the child itself). Not
    /// `--background`: it waits for the sync lock instead of leaving at once when another sync
    /// holds it, so no version of the file goes unjudged. Returns its pid, or the sentence
    /// saying why the program was refused or could not start.
    public func startSyncChild() -> (pid: pid_t?, problem: String?) {
        let program: ProgramFile
        do { program = try openProgram() } catch { return (nil, Self.refusal(error)) }
        var pid: pid_t = 0
        let result = spawnSilently(program, ["sync", "--deadline-ms", String(settings.deadlineMilliseconds)], pid: &pid)
        return result == 0 ? (pid, nil) : (nil, "cannot start \(programPath): \(errorString(result)).")
    }

    /// Runs the sync with the before-start deadline and waits for it (killing it if it
    /// overstays by more than a second).
    private func runAndWait() -> String? {
        let program: ProgramFile
        do { program = try openProgram() } catch {
            return error.code == .fileNotFound ? nil : Self.refusal(error)
        }
        let deadline = settings.beforeStartDeadlineMilliseconds
        var pid: pid_t = 0
        let result = spawnSilently(program, ["sync", "--background", "--deadline-ms", String(deadline)], pid: &pid)
        guard result == 0 else { return nil }
        let giveUpAt = monotonicNow() + Double(deadline) / 1000 + 1
        var status: Int32 = 0
        while true {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid || (done < 0 && errno != EINTR) { return nil }
            if monotonicNow() >= giveUpAt {
                kill(pid, SIGKILL)
                _ = retryingInterrupts { waitpid(pid, &status, 0) }
                return nil
            }
            var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
            nanosleep(&pause, nil)
        }
    }

    /// `posix_spawn` of the checked program through procfs (the open descriptor's file, never
    /// what the name holds by now), its standard streams on /dev/null; it dies with this
    /// process (`ParentDeath`).
    private func spawnSilently(_ program: ProgramFile, _ arguments: [String], pid: inout pid_t) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The supervisor blocks the signals it reads through its signalfd: not the sync's.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var spawned: pid_t = 0
        let result = withExtendedLifetime(program) {
            withCArguments(arguments) { argv in
                // It dies with this process (ParentDeath): a sync applies directives, and
                // with them conversions of the data.
                withCStrings(PendingSteps.processEnvironment().filter { !$0.hasPrefix(ParentDeath.variable + "=") }
                             + [ParentDeath.environmentEntry]) { envp in
                    posix_spawn(&spawned, program.procPath, &actions, &attributes, argv, envp)
                }
            }
        }
        pid = spawned
        return result
    }

    /// Calls `body` with a NULL-terminated argv: the program, `--state-dir`, `--bundle`, then `arguments`.
    private func withCArguments<T>(_ arguments: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
        withCStrings([programPath, "--state-dir", directory.path, "--bundle", bundleRoot] + arguments, body)
    }
}
