#if canImport(Glibc)
import Glibc
#endif
import SwitchbackSystem

/// Supervise mode: a parent that never loads AppCore starts the chosen slot in a child (the
/// same launcher, re-executed), restarts it with exponential backoff when it exits
/// abnormally, marks a good build bad when it keeps crashing, replaces the child when the
/// persisted choice changes, forwards signals, and leaves no zombie and no orphan.
///
/// Single-threaded: signals arrive through a signalfd, the child's report through a pipe,
/// and both are polled together with the timers.
public final class Supervisor {
    /// Set in the child's environment: the supervisor's pid (removed before the app runs).
    static let parentVariable = "SWITCHBACK_SUPERVISOR_PID"
    /// Set in the child's environment: the pipe on which the child names its slot and build.
    static let reportVariable = "SWITCHBACK_SUPERVISOR_FD"
    static let forwarded: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2]

    /// True when this launcher should supervise: `SWITCHBACK_SUPERVISE=1|0`, else the manifest.
    public static func isEnabled(manifest: Manifest) -> Bool {
        switch environmentValue("SWITCHBACK_SUPERVISE") {
        case "1", "true": return true
        case "0", "false": return false
        default: return manifest.supervise
        }
    }

    /// True when this process is a supervised child.
    static var isChild: Bool { environmentValue(parentVariable) != nil }

    /// In a child: die with the supervisor (PR_SET_PDEATHSIG), and exit if it is already gone.
    static func adoptParent() {
        guard let value = environmentValue(parentVariable), let parent = Int32(value) else { return }
        _ = switchback_set_parent_death_signal(SIGKILL)
        if getppid() != parent { _exit(Launcher.failureExitCode) }
    }

    /// In a child, right before the entry point: names the slot and build to the supervisor
    /// and removes the supervisor's variables from the environment the app sees.
    static func reportToParent(slot: BuildSlot, build: String) {
        if let value = environmentValue(reportVariable), let fd = Int32(value) {
            var line = "\(slot.rawValue) \(build)\n"
            _ = line.withUTF8 { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        unsetenv(reportVariable)
        unsetenv(parentVariable)
    }

    // MARK: - The parent

    let manifest: Manifest
    let directory: StateDirectory
    let trusted: Bool
    let settings: SupervisorSettings
    private var signalFD: Int32 = -1
    private var child: pid_t?
    private var childSlot: BuildSlot?
    private var childBuild: String?
    private var childStarted = 0.0
    private var reportFD: Int32 = -1
    private var restarts = 0
    private var backoff: Int
    private var restartAt: Double?
    private var stopDeadline: Double?
    private var replaceDeadline: Double?
    private var lastStatus: Int32 = 0
    private var watched: [FileFingerprint?] = []
    private var crashes: CrashWindow
    private let startedAt = currentUnixTime()
    private let remoteCheck: RemoteCheckTrigger?

    init(manifest: Manifest, directory: StateDirectory, trusted: Bool) {
        self.manifest = manifest
        self.directory = directory
        self.trusted = trusted
        settings = SupervisorSettings(manifest: manifest)
        backoff = settings.backoffInitialMilliseconds
        crashes = CrashWindow(limit: settings.crashLimit, windowMilliseconds: settings.crashWindowMilliseconds)
        remoteCheck = trusted ? Launcher.bundleRoot().flatMap {
            RemoteCheckTrigger(manifest: manifest, directory: directory, bundleRoot: $0)
        } : nil
    }

    /// Supervises until the app exits 0 or the supervisor is told to stop; exits with the
    /// child's status (its exit code, or 128 + the signal that killed it).
    public static func run(manifest: Manifest, directory: StateDirectory, trusted: Bool) -> Never {
        Supervisor(manifest: manifest, directory: directory, trusted: trusted).loop()
    }

    private func loop() -> Never {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in Self.forwarded + [SIGCHLD] { sigaddset(&set, signal) }
        sigprocmask(SIG_BLOCK, &set, nil)
        signalFD = signalfd(-1, &set, Int32(SFD_CLOEXEC | SFD_NONBLOCK))
        if signalFD < 0 { Launcher.fail("supervisor: signalfd failed: \(errorString(errno)).") }
        watched = fingerprints()
        spawn()
        while true {
            var fds = [pollfd(fd: signalFD, events: Int16(POLLIN), revents: 0)]
            if reportFD >= 0 { fds.append(pollfd(fd: reportFD, events: Int16(POLLIN), revents: 0)) }
            _ = poll(&fds, nfds_t(fds.count), Int32(nextTimeout()))
            if fds[0].revents != 0 { handleSignals() }
            if fds.count > 1, fds[1].revents != 0 { readReport() }
            tick()
        }
    }

    private func nextTimeout() -> Int {
        let now = monotonicNow()
        var timeout = Double(settings.pollMilliseconds) / 1000
        for deadline in [restartAt, stopDeadline, replaceDeadline].compactMap({ $0 }) {
            timeout = min(timeout, max(0, deadline - now))
        }
        return Int((timeout * 1000).rounded(.up))
    }

    private func spawn() {
        restartAt = nil
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else { Launcher.fail("supervisor: pipe failed: \(errorString(errno)).") }
        _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
        setenv(Self.parentVariable, String(getpid()), 1)
        setenv(Self.reportVariable, String(pipeFDs[1]), 1)
        var pid: pid_t = 0
        let result = withChildSpawnAttributes { posix_spawn(&pid, "/proc/self/exe", nil, $0, CommandLine.unsafeArgv, environ) }
        close(pipeFDs[1])
        unsetenv(Self.parentVariable)
        unsetenv(Self.reportVariable)
        if result != 0 {
            close(pipeFDs[0])
            Launcher.printError("launcher: supervisor: starting the app failed: \(errorString(result)); retrying in \(backoff) ms.")
            scheduleRestart()
            return
        }
        if reportFD >= 0 { close(reportFD) }
        reportFD = pipeFDs[0]
        child = pid
        childSlot = nil
        childBuild = nil
        childStarted = monotonicNow()
        publish()
    }

    private func readReport() {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(reportFD, $0.baseAddress, $0.count) }
        if count > 0 {
            let words = String(decoding: buffer[0..<count], as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
            if words.count >= 2, let slot = BuildSlot(rawValue: String(words[0])) {
                childSlot = slot
                childBuild = String(words[1])
                publish()
            }
        }
        if count <= 0 || childSlot != nil {
            close(reportFD)
            reportFD = -1
        }
    }

    private func handleSignals() {
        var info = signalfd_siginfo()
        while read(signalFD, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
            let signal = Int32(info.ssi_signo)
            if signal == SIGCHLD {
                reapChildren()
            } else if signal == SIGTERM || signal == SIGINT {
                guard let child else { finish(128 + signal) }
                kill(child, signal)
                if stopDeadline == nil { stopDeadline = monotonicNow() + Double(settings.graceMilliseconds) / 1000 }
            } else if let child {
                kill(child, signal)
            }
        }
    }

    private func reapChildren() {
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            if pid <= 0 { return }
            if pid == child { childExited(status) }
        }
    }

    private func childExited(_ status: Int32) {
        let cleanExit = switchback_exited(status) != 0 && switchback_exit_code(status) == 0
        lastStatus = switchback_exited(status) != 0 ? switchback_exit_code(status) : 128 + switchback_term_signal(status)
        let pid = child ?? 0
        child = nil
        if reportFD >= 0 { readReport() }
        if stopDeadline != nil { finish(lastStatus) }
        if replaceDeadline != nil {
            replaceDeadline = nil
            spawn()
            return
        }
        if cleanExit { finish(0) }

        restarts = min(restarts &+ 1, ValueRange.count.upperBound)
        let how = switchback_exited(status) != 0 ? "exited with code \(lastStatus)" : "was killed by signal \(switchback_term_signal(status))"
        let slot = childSlot.map { "\($0.rawValue) slot" } ?? "app"
        if monotonicNow() - childStarted >= Double(settings.backoffResetAfterMilliseconds) / 1000 {
            backoff = settings.backoffInitialMilliseconds
        }
        Launcher.printError("launcher: supervisor: the \(slot) (pid \(pid)) \(how); restarting in \(backoff) ms (restart \(restarts)).")
        if let slot = childSlot, let build = childBuild, trusted { countCrashOfGoodBuild(slot: slot, build: build) }
        scheduleRestart()
        publish()
    }

    private func scheduleRestart() {
        restartAt = monotonicNow() + Double(backoff) / 1000
        // Settings are at most 2^31 - 1 ms (ValueRange.duration), but double without trapping
        // whatever a manifest made in code holds.
        let doubled = backoff.multipliedReportingOverflow(by: 2)
        backoff = doubled.overflow ? settings.backoffMaxMilliseconds : min(doubled.partialValue, settings.backoffMaxMilliseconds)
    }

    /// Crashes before the good mark use up tries in the child's own start-up; crashes of a
    /// build already good are counted here, K within the window marking it bad.
    private func countCrashOfGoodBuild(slot: BuildSlot, build: String) {
        let store = HealthStore(directory: directory)
        let record = store.load().record
        let identity = BuildIdentity(sha256: build, version: manifest[slot].version)
        guard record.health(of: identity, tries: manifest.trialTries).isGood,
              crashes.record(build: build, at: Int64(monotonicNow() * 1000)) else { return }
        let seconds = settings.crashWindowMilliseconds / 1000
        let why = "crashed \(settings.crashLimit) times within \(seconds) s after it was marked good"
        do {
            try store.update(durable: true) { (record: inout HealthRecord) throws(SwitchbackError) in
                var health = record.health(of: identity, tries: manifest.trialTries)
                health.verdict = .bad
                health.markedBy = .auto
                health.changedAt = currentUnixTime()
                health.note = why
                record.set(health)
            }
        } catch {
            Launcher.printError("launcher: supervisor: the \(slot.rawValue) build \(why), but its bad verdict could not be recorded (\(error.message)).")
        }
        let other = record.health(of: slot.other, in: manifest)
        let description = "the \(slot.rawValue) build (\(manifest[slot].version)) \(why)"
        if other.isRejected {
            Launcher.printError("launcher: supervisor: WARNING: \(description), but automatic rollback will not switch to the \(slot.other.rawValue) build (\(manifest[slot.other].version)), which was rejected: \(other.note ?? "marked bad"). Fix the build, or choose one with rollbackctl.")
        } else if !other.isBad, let bundleRoot = Launcher.bundleRoot() {
            // The child is gone: nothing writes the data while it is converted back.
            let switcher = Switcher(bundleRoot: bundleRoot, manifest: manifest, directory: directory)
            do {
                let result = try switcher.perform(rollback: slot.other == .previous, source: .auto, reason: description)
                if let refusal = result.refusal {
                    Launcher.printError("launcher: supervisor: \(description), but it stays: \(refusal)")
                    return
                }
            } catch {
                Launcher.printError("launcher: supervisor: \(description), but the switch could not be recorded: \(error.message)")
                return
            }
            Launcher.printError("launcher: supervisor: \(description); starting the \(slot.other.rawValue) slot (\(manifest[slot.other].version)) instead.")
        } else {
            Launcher.printError("launcher: supervisor: \(description), and the \(slot.other.rawValue) build is bad too.")
        }
    }

    private func tick() {
        let now = monotonicNow()
        if let deadline = stopDeadline, now >= deadline, let child { kill(child, SIGKILL) }
        if let deadline = replaceDeadline, now >= deadline, let child { kill(child, SIGKILL) }
        if let at = restartAt, now >= at, child == nil, stopDeadline == nil { spawn() }
        // A long-running app keeps its directive fresh: one stat per tick, a detached sync
        // per interval; an applied directive changes the state file, which the next lines see.
        if let problem = remoteCheck?.startInBackgroundIfDue() { Launcher.printError("launcher: supervisor: \(problem)") }
        watchPersistedChoice()
    }

    /// Replaces the child when the state or health files changed and now select another slot.
    private func watchPersistedChoice() {
        guard trusted, let child, let running = childSlot, stopDeadline == nil, replaceDeadline == nil else { return }
        let now = fingerprints()
        guard now != watched else { return }
        watched = now
        let wanted = desiredSlot()
        guard wanted != running else { return }
        Launcher.printError("launcher: supervisor: the persisted choice now selects the \(wanted.rawValue) slot; replacing the \(running.rawValue) slot (pid \(child)).")
        kill(child, SIGTERM)
        replaceDeadline = monotonicNow() + Double(settings.graceMilliseconds) / 1000
    }

    /// The slot the persisted choice selects now. The running build keeps running unless it
    /// was marked bad: using its last try is not a reason to replace it (the next start is).
    private func desiredSlot() -> BuildSlot {
        let loaded = StateStore(directory: directory).load()
        let record = HealthStore(directory: directory).load().record
        guard let unchecked = try? StartPlan.make(state: loaded, health: record, manifest: manifest,
                                                  forcedSlot: environmentValue("SWITCHBACK_SLOT"), applyHealth: false),
              let plan = try? StartPlan.make(state: loaded, health: record, manifest: manifest,
                                             forcedSlot: environmentValue("SWITCHBACK_SLOT")) else {
            return childSlot ?? .current
        }
        let chosen = unchecked.decision.slot
        if chosen == childSlot, !record.health(of: chosen, in: manifest).isBad { return chosen }
        return plan.decision.slot
    }

    private func fingerprints() -> [FileFingerprint?] {
        [directory.statePath, HealthStore(directory: directory).path].map { path in
            (try? FileSystem.status(path)).flatMap { $0.map(FileFingerprint.init) }
        }
    }

    private func publish() {
        guard trusted else { return }
        SupervisorRecord(pid: getpid(), startedAt: startedAt, childPID: child, childSlot: childSlot,
                         childStartedAt: child == nil ? nil : currentUnixTime() - Int64(monotonicNow() - childStarted),
                         restarts: restarts).save(in: directory)
    }

    private func finish(_ status: Int32) -> Never {
        if trusted { unlink(SupervisorRecord.path(in: directory)) }
        exit(status)
    }
}

/// Seconds on the monotonic clock.
func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
