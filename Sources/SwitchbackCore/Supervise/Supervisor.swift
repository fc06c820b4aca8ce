#if canImport(Glibc)
import Glibc
#endif
import SwitchbackSystem

/// Supervise mode: a parent that never loads AppCore starts the chosen slot in a child (the
/// same launcher, re-executed), restarts it with exponential backoff when it exits
/// abnormally, marks a good build bad when it keeps crashing, stops a child that is not
/// ready by its start deadline or stops pinging its watchdog, and replaces the child when
/// the persisted choice changes: with listening sockets declared, the new child starts on
/// the same sockets and the old one is stopped only once the new one is ready.
///
/// Single-threaded: signals arrive through a signalfd, children's reports through pipes,
/// their sd_notify messages through a datagram socket, state changes through inotify, and
/// all of them are polled together with the timers.
public final class Supervisor {
    /// Set in the child's environment: the supervisor's pid (removed before the app runs).
    static let parentVariable = "SWITCHBACK_SUPERVISOR_PID"
    /// Set in the child's environment: the pipe on which the child names its slot and build.
    static let reportVariable = "SWITCHBACK_SUPERVISOR_FD"
    static let forwarded: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2]
    /// The variables a child gets from the supervisor, never from the supervisor's own parent.
    static let childVariables = ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID",
                                 "WATCHDOG_USEC", "WATCHDOG_PID", parentVariable, reportVariable]
    /// How long a stopped child gets to write its backtrace before SIGKILL.
    static let backtraceSeconds = 5.0

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
    /// The supervisor could not know this pid before the child started: LISTEN_PID and
    /// WATCHDOG_PID are set here, as systemd sets them for the process it starts.
    static func adoptParent() {
        guard let value = environmentValue(parentVariable), let parent = Int32(value) else { return }
        _ = switchback_set_parent_death_signal(SIGKILL)
        if getppid() != parent { _exit(Launcher.failureExitCode) }
        let pid = String(getpid())
        if environmentValue("LISTEN_FDS") != nil { setenv("LISTEN_PID", pid, 1) }
        if environmentValue("WATCHDOG_USEC") != nil { setenv("WATCHDOG_PID", pid, 1) }
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
    private var inotifyFD: Int32 = -1
    private let notify: ChildNotifications
    private let systemd: SystemdLink?
    private var nextSystemdPing = 0.0
    /// The listening sockets every child gets at fds 3..., with their names.
    private var listeners: [(fd: Int32, name: String, address: String)] = []

    private var serving: SupervisedChild?
    private var candidate: SupervisedChild?
    private var draining: [SupervisedChild] = []
    private var probe: (attempt: ReadinessProbe, pid: pid_t)?
    private var nextProbeAt = 0.0
    /// Stop-first replacement (no listening sockets): the next child starts when this one exits.
    private var replacing = false
    private var lastSwitchFailure: SupervisorRecord.SwitchFailure?

    private var restarts = 0
    private var backoff: Int
    private var restartAt: Double?
    private var stopDeadline: Double?
    private var servingStatus: Int32 = 0
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
        if let problem = SupervisorSettings.problem(in: manifest) { Launcher.fail(problem) }
        systemd = SystemdLink.take()
        do { notify = try ChildNotifications() } catch { Launcher.fail(error.message) }
        listeners = Self.openListeners(settings.listen)
    }

    /// Supervises until the app exits 0 or the supervisor is told to stop; exits with the
    /// child's status (its exit code, or 128 + the signal that killed it).
    public static func run(manifest: Manifest, directory: StateDirectory, trusted: Bool) -> Never {
        Supervisor(manifest: manifest, directory: directory, trusted: trusted).loop()
    }

    /// The sockets systemd passed (socket activation: LISTEN_PID is this process), else the
    /// declared addresses, opened here. Moved to descriptors 64 and up, close-on-exec, so
    /// that every child gets them at 3... without a collision.
    static func openListeners(_ addresses: [ListenAddress]) -> [(fd: Int32, name: String, address: String)] {
        var opened: [(fd: Int32, name: String, address: String)] = []
        if environmentValue("LISTEN_PID").flatMap(Int32.init) == getpid(),
           let count = environmentValue("LISTEN_FDS").flatMap(Int32.init), count > 0, count <= 32 {
            let names = (environmentValue("LISTEN_FDNAMES") ?? "").split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            for index in 0..<Int(count) {
                let fd = Int32(3 + index)
                opened.append((fd, index < names.count ? names[index] : "listen", "systemd socket \(index + 1)"))
            }
        } else {
            for address in addresses {
                do { opened.append((try address.open(), address.name, address.description)) } catch { Launcher.fail(error.message) }
            }
        }
        for name in ["LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID"] { unsetenv(name) }
        return opened.map { listener in
            let moved = fcntl(listener.fd, F_DUPFD_CLOEXEC, Int32(64))
            if moved < 0 { Launcher.fail("supervisor: cannot keep the listening socket \(listener.address): \(errorString(errno)).") }
            close(listener.fd)
            return (moved, listener.name, listener.address)
        }
    }

    private func loop() -> Never {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in Self.forwarded + [SIGCHLD] { sigaddset(&set, signal) }
        sigprocmask(SIG_BLOCK, &set, nil)
        signalFD = signalfd(-1, &set, Int32(SFD_CLOEXEC | SFD_NONBLOCK))
        if signalFD < 0 { Launcher.fail("supervisor: signalfd failed: \(errorString(errno)).") }
        watchStateDirectory()
        watched = fingerprints()
        serving = spawn(intended: desiredSlot(running: nil))
        if serving == nil { scheduleRestart() }
        while true {
            var fds = [pollfd(fd: signalFD, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: notify.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: inotifyFD, events: Int16(POLLIN), revents: 0)]
            let reports = children.map(\.reportFD).filter { $0 >= 0 }
            fds += reports.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if let probe, let events = probe.attempt.events { fds.append(pollfd(fd: probe.attempt.fd, events: events, revents: 0)) }
            _ = poll(&fds, nfds_t(fds.count), Int32(nextTimeout()))
            if fds[0].revents != 0 { handleSignals() }
            if fds[1].revents != 0 { handleNotifications() }
            // A change in the state directory only wakes the loop: tick() compares the files.
            if fds[2].revents != 0 { drainInotify() }
            for entry in fds[3..<(3 + reports.count)] where entry.revents != 0 { readReport(from: entry.fd) }
            if let last = fds.last, fds.count > 3 + reports.count, last.revents != 0, let current = probe {
                if let outcome = current.attempt.advance() { probeFinished(outcome, pid: current.pid) }
            }
            tick()
        }
    }

    private var children: [SupervisedChild] { [serving, candidate].compactMap { $0 } + draining }

    private func nextTimeout() -> Int {
        let now = monotonicNow()
        // inotify wakes the loop for state changes; the poll period is the fallback.
        var timeout = Double(settings.pollMilliseconds) / 1000
        var deadlines = [restartAt, stopDeadline].compactMap { $0 }
        for child in children {
            deadlines += [child.killAt, child.phase == .starting && child.stop == nil ? child.deadline : nil].compactMap { $0 }
            if let signal = child.readySignal, child.phase == .starting { deadlines.append(signal.at + Double(settings.minReadyMilliseconds) / 1000) }
            if child.phase == .ready, settings.watchdogMilliseconds > 0 { deadlines.append(child.lastWatchdogPing + Double(settings.watchdogMilliseconds) / 1000) }
        }
        if let probe { deadlines.append(probe.attempt.deadline) } else if settings.readiness != .mark, unreadyChild != nil { deadlines.append(nextProbeAt) }
        if systemd?.watchdogPeriod != nil { deadlines.append(nextSystemdPing) }
        for deadline in deadlines { timeout = min(timeout, max(0, deadline - now)) }
        return Int((timeout * 1000).rounded(.up))
    }

    // MARK: Starting children

    /// Starts a child on the listening sockets; nil (said on stderr) when posix_spawn failed.
    private func spawn(intended: BuildSlot?) -> SupervisedChild? {
        restartAt = nil
        var pipeFDs: [Int32] = [-1, -1]
        guard switchback_pipe_cloexec(&pipeFDs) == 0 else { Launcher.fail("supervisor: pipe failed: \(errorString(errno)).") }
        // Both ends above the descriptors the child gets, so no dup2 overwrites another.
        let readEnd = fcntl(pipeFDs[0], F_DUPFD_CLOEXEC, Int32(64))
        let writeEnd = fcntl(pipeFDs[1], F_DUPFD_CLOEXEC, Int32(64))
        close(pipeFDs[0])
        close(pipeFDs[1])
        let reportTarget = Int32(3 + listeners.count)

        var environment = Self.inheritedEnvironment()
        environment.append("\(Self.parentVariable)=\(getpid())")
        environment.append("\(Self.reportVariable)=\(reportTarget)")
        environment.append("NOTIFY_SOCKET=\(notify.name)")
        if !listeners.isEmpty {
            environment.append("LISTEN_FDS=\(listeners.count)")
            environment.append("LISTEN_FDNAMES=\(listeners.map(\.name).joined(separator: ":"))")
        }
        if settings.watchdogMilliseconds > 0 { environment.append("WATCHDOG_USEC=\(settings.watchdogMilliseconds * 1000)") }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (index, listener) in listeners.enumerated() { posix_spawn_file_actions_adddup2(&actions, listener.fd, Int32(3 + index)) }
        posix_spawn_file_actions_adddup2(&actions, writeEnd, reportTarget)
        switchback_spawn_close_from(&actions, reportTarget + 1)

        var pid: pid_t = 0
        let result = withCStrings(environment) { envp in
            withChildSpawnAttributes { posix_spawn(&pid, "/proc/self/exe", &actions, $0, CommandLine.unsafeArgv, UnsafeMutablePointer(mutating: envp)) }
        }
        close(writeEnd)
        if result != 0 {
            close(readEnd)
            Launcher.printError("launcher: supervisor: starting the app failed: \(errorString(result)); retrying in \(backoff) ms.")
            return nil
        }
        let deadline = settings.startDeadlineMilliseconds > 0 ? monotonicNow() + Double(settings.startDeadlineMilliseconds) / 1000 : nil
        nextProbeAt = monotonicNow()
        return SupervisedChild(pid: pid, intendedSlot: intended, reportFD: readEnd, deadline: deadline)
    }

    /// This process's environment without the variables the supervisor sets for its children.
    static func inheritedEnvironment() -> [String] {
        var environment: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if !childVariables.contains(name) { environment.append(text) }
            entry += 1
        }
        return environment
    }

    // MARK: Events

    private func readReport(from fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        var named = false
        if count > 0 {
            let words = String(decoding: buffer[0..<count], as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
            if words.count >= 2, let slot = BuildSlot(rawValue: String(words[0])) {
                update(reportFD: fd) {
                    $0.slot = slot
                    $0.build = String(words[1])
                }
                named = true
                publish()
            }
        }
        if count <= 0 || named {
            close(fd)
            update(reportFD: fd) { $0.reportFD = -1 }
        }
    }

    private func handleNotifications() {
        let now = monotonicNow()
        for message in notify.receive() {
            update(pid: message.pid) { child in
                for (key, value) in message.fields {
                    switch key {
                    case "READY" where value == "1":
                        if child.readySignal == nil { child.readySignal = (now, "it said it was ready") }
                    case "EXTEND_TIMEOUT_USEC":
                        if let microseconds = Int(value), child.phase == .starting, let deadline = child.deadline {
                            child.deadline = max(deadline, now + Double(min(microseconds, Int(Int32.max) * 1000)) / 1e6)
                        }
                    case "WATCHDOG" where value == "1":
                        child.lastWatchdogPing = now
                    case "X_SWITCHBACK_ADOPTED":
                        child.hasAdoptedSocket = true
                    default:
                        break
                    }
                }
            }
        }
    }

    private func handleSignals() {
        var info = signalfd_siginfo()
        while read(signalFD, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
            let signal = Int32(info.ssi_signo)
            if signal == SIGCHLD {
                reapChildren()
            } else if signal == SIGTERM || signal == SIGINT {
                guard !children.isEmpty else { finish(128 + signal) }
                systemd?.send("STOPPING=1")
                for child in children { kill(child.pid, signal) }
                probe?.attempt.cancel()
                if stopDeadline == nil { stopDeadline = monotonicNow() + Double(settings.graceMilliseconds) / 1000 }
            } else if let serving {
                kill(serving.pid, signal)
            }
        }
    }

    private func reapChildren() {
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            if pid <= 0 { return }
            if let current = probe, current.attempt.commandPID == pid {
                probeFinished(current.attempt.commandExited(status), pid: current.pid)
            } else if serving?.pid == pid {
                servingExited(status)
            } else if candidate?.pid == pid {
                candidateExited(status)
            } else if let index = draining.firstIndex(where: { $0.pid == pid }) {
                let child = draining.remove(at: index)
                if child.reportFD >= 0 { close(child.reportFD) }
                if stopDeadline != nil, children.isEmpty { finish(servingStatus) }
            }
        }
    }

    private func servingExited(_ status: Int32) {
        guard var child = serving else { return }
        if child.reportFD >= 0 { readReport(from: child.reportFD) }
        child = serving ?? child
        serving = nil
        if child.reportFD >= 0 { close(child.reportFD) }
        cancelProbe(of: child.pid)
        let cleanExit = switchback_exited(status) != 0 && switchback_exit_code(status) == 0
        servingStatus = switchback_exited(status) != 0 ? switchback_exit_code(status) : 128 + switchback_term_signal(status)
        if stopDeadline != nil {
            if children.isEmpty { finish(servingStatus) }
            return
        }
        if replacing {
            replacing = false
            serving = spawn(intended: desiredSlot(running: nil))
            if serving == nil { scheduleRestart() }
            publish()
            return
        }
        // A candidate already starting takes over; it is what the choice wants anyway.
        if let next = candidate {
            candidate = nil
            serving = next
        }
        if cleanExit && serving == nil { finish(0) }

        restarts = min(restarts &+ 1, ValueRange.count.upperBound)
        if monotonicNow() - child.startedAt >= Double(settings.backoffResetAfterMilliseconds) / 1000 {
            backoff = settings.backoffInitialMilliseconds
        }
        let how = Self.describe(status)
        if serving == nil {
            Launcher.printError("launcher: supervisor: \(child.title) \(how); restarting in \(backoff) ms (restart \(restarts)).")
        } else {
            Launcher.printError("launcher: supervisor: \(child.title) \(how); \(serving!.title), already starting, takes over.")
        }
        if let slot = child.slot, let build = child.build, trusted, !cleanExit { countCrashOfGoodBuild(slot: slot, build: build) }
        if serving == nil { scheduleRestart() }
        publish()
    }

    private func candidateExited(_ status: Int32) {
        guard var child = candidate else { return }
        if child.reportFD >= 0 { readReport(from: child.reportFD) }
        child = candidate ?? child
        candidate = nil
        if child.reportFD >= 0 { close(child.reportFD) }
        cancelProbe(of: child.pid)
        if stopDeadline != nil {
            if children.isEmpty { finish(servingStatus) }
            return
        }
        let why: String
        switch child.stop {
        case .hung(let seconds): why = "it was not ready within \(Self.format(seconds)) s"
        case .watchdog, nil: why = "it \(Self.describe(status)) before it was ready"
        }
        switchFailed(child, why: why)
    }

    /// A live switch that did not happen: the serving child goes on; status and history say
    /// why; the choice is looked at again only when it changes again.
    private func switchFailed(_ child: SupervisedChild, why: String) {
        let target = child.slot ?? child.intendedSlot ?? .current
        let running = serving?.slot ?? target.other
        let reason = "the switch to the \(target.rawValue) slot (\(manifest[target].version)) did not happen: \(why); the \(running.rawValue) slot (\(manifest[running].version)) keeps serving"
        Launcher.printError("launcher: supervisor: \(HealthPolicy.capitalized(reason)).")
        lastSwitchFailure = SupervisorRecord.SwitchFailure(slot: target, at: currentUnixTime(), reason: reason)
        recordHistory(kind: .switchFailed, from: running, to: target, reason: reason)
        watched = fingerprints()
        if let serving { systemd?.send("READY=1", "STATUS=\(statusLine(serving)); \(reason)") }
        publish()
    }

    private func probeFinished(_ outcome: ReadinessProbe.Outcome, pid: pid_t) {
        probe = nil
        nextProbeAt = monotonicNow() + Double(settings.probeIntervalMilliseconds) / 1000
        guard outcome == .passed else { return }
        // A probe of a shared address answers for a new child only once it holds the socket:
        // until then the child it replaces is the one answering.
        let shared = settings.readiness.address.map { address in listeners.contains { $0.address == address.description } } ?? false
        let alone = serving?.pid == pid && candidate == nil
        let how = "\(settings.readiness) passed"
        update(pid: pid) { child in
            if child.readySignal == nil, !shared || alone || child.hasAdoptedSocket {
                child.readySignal = (monotonicNow(), how)
            }
        }
    }

    // MARK: Timers

    private func tick() {
        let now = monotonicNow()
        if let deadline = stopDeadline, now >= deadline {
            for child in children { kill(child.pid, SIGKILL) }
        }
        for child in children {
            if let killAt = child.killAt, now >= killAt { kill(child.pid, SIGKILL) }
        }
        if stopDeadline == nil {
            checkStartingChildren(now: now)
            checkWatchdog(now: now)
            runProbe(now: now)
        }
        if let at = restartAt, now >= at, serving == nil, candidate == nil, stopDeadline == nil {
            serving = spawn(intended: desiredSlot(running: nil))
            if serving == nil { scheduleRestart() }
            publish()
        }
        if let period = systemd?.watchdogPeriod, now >= nextSystemdPing {
            systemd?.send("WATCHDOG=1")
            nextSystemdPing = now + period
        }
        // A long-running app keeps its directive fresh: one stat per tick, a detached sync
        // per interval; an applied directive changes the state file, which the next lines see.
        if let problem = remoteCheck?.startInBackgroundIfDue() { Launcher.printError("launcher: supervisor: \(problem)") }
        watchPersistedChoice()
    }

    /// Unready children: the ready signal plus the minimum time makes them ready; the
    /// deadline stops them (SIGABRT first, for a backtrace).
    private func checkStartingChildren(now: Double) {
        if let child = serving, let ready = checkStarting(child, now: now, replacing: nil) {
            serving = ready.child
            if ready.isReady { childBecameReady(pid: child.pid) }
        }
        if let child = candidate, let ready = checkStarting(child, now: now, replacing: serving?.slot) {
            candidate = ready.child
            if ready.isReady { childBecameReady(pid: child.pid) }
        }
    }

    /// The child as it is now, and whether it just became ready; nil when nothing changed.
    private func checkStarting(_ child: SupervisedChild, now: Double, replacing running: BuildSlot?) -> (child: SupervisedChild, isReady: Bool)? {
        guard child.phase == .starting, child.stop == nil else { return nil }
        var child = child
        if let signal = child.readySignal, now >= signal.at + Double(settings.minReadyMilliseconds) / 1000 {
            child.phase = .ready
            child.lastWatchdogPing = now
            return (child, true)
        }
        guard let deadline = child.deadline, now >= deadline else { return nil }
        // The deadline it had (extensions included), not the moment this tick ran.
        let seconds = deadline - child.startedAt
        child.stop = .hung(seconds: seconds)
        child.killAt = now + Self.backtraceSeconds
        kill(child.pid, SIGABRT)
        let slot = child.slot ?? child.intendedSlot ?? .current
        let reason = "\(child.title) was not ready within \(Self.format(seconds)) s (supervise.start_deadline_ms); stopped with SIGABRT for a backtrace, counted as a failed start"
        Launcher.printError("launcher: supervisor: \(HealthPolicy.capitalized(reason)).")
        recordHistory(kind: .hungStart, from: running ?? slot, to: slot, reason: reason)
        return (child, false)
    }

    private func childBecameReady(pid: pid_t) {
        cancelProbe(of: pid)
        if var child = candidate, child.pid == pid {
            // The switch: the new child serves; the old one stops gracefully.
            candidate = nil
            if var old = serving {
                kill(old.pid, SIGTERM)
                old.phase = .draining
                old.killAt = monotonicNow() + Double(settings.graceMilliseconds) / 1000
                draining.append(old)
                Launcher.printError("launcher: supervisor: \(child.title) is ready (\(child.readySignal?.how ?? "ready")); stopping \(old.title) gracefully.")
            }
            child.phase = .ready
            serving = child
            lastSwitchFailure = nil
        }
        guard let serving, serving.pid == pid else { return }
        if let how = serving.readySignal?.how, how != "it said it was ready" { recordGoodMark(serving, how: how) }
        systemd?.send("READY=1", "STATUS=\(statusLine(serving))", "MAINPID=\(getpid())")
        publish()
        // The choice may have changed again while the candidate started.
        watched = []
    }

    private func checkWatchdog(now: Double) {
        guard settings.watchdogMilliseconds > 0, var child = serving, child.phase == .ready, child.stop == nil,
              now - child.lastWatchdogPing >= Double(settings.watchdogMilliseconds) / 1000 else { return }
        child.stop = .watchdog(milliseconds: settings.watchdogMilliseconds)
        child.killAt = now + Self.backtraceSeconds
        serving = child
        kill(child.pid, SIGABRT)
        Launcher.printError("launcher: supervisor: \(child.title) sent no WATCHDOG=1 within \(settings.watchdogMilliseconds) ms (supervise.watchdog_ms); stopped with SIGABRT for a backtrace, counted as a crash.")
    }

    /// The probe runs against the one unready child, every interval, one attempt at a time.
    private var unreadyChild: SupervisedChild? {
        [candidate, serving].compactMap { $0 }.first { $0.phase == .starting && $0.stop == nil && $0.readySignal == nil }
    }

    private func runProbe(now: Double) {
        if let current = probe, now >= current.attempt.deadline {
            current.attempt.cancel()
            probeFinished(.failed("timed out"), pid: current.pid)
        }
        guard settings.readiness != .mark, probe == nil, now >= nextProbeAt, let child = unreadyChild else { return }
        let attempt = ReadinessProbe(settings.readiness, childPID: child.pid, timeout: 1)
        if let outcome = attempt.immediate {
            probeFinished(outcome, pid: child.pid)
        } else {
            probe = (attempt, child.pid)
        }
    }

    private func cancelProbe(of pid: pid_t) {
        guard let current = probe, current.pid == pid else { return }
        current.attempt.cancel()
        if current.attempt.commandPID == nil { probe = nil }
    }

    private func scheduleRestart() {
        restartAt = monotonicNow() + Double(backoff) / 1000
        // Settings are at most 2^31 - 1 ms (ValueRange.duration), but double without trapping
        // whatever a manifest made in code holds.
        let doubled = backoff.multipliedReportingOverflow(by: 2)
        backoff = doubled.overflow ? settings.backoffMaxMilliseconds : min(doubled.partialValue, settings.backoffMaxMilliseconds)
    }

    // MARK: The persisted choice

    /// Replaces the child when the state or health files changed and now select another
    /// slot: with listening sockets, a candidate starts beside the serving child; without,
    /// the serving child stops first.
    private func watchPersistedChoice() {
        guard trusted, let running = serving, let runningSlot = running.slot, candidate == nil, !replacing,
              stopDeadline == nil, running.stop == nil else { return }
        let now = fingerprints()
        guard now != watched else { return }
        watched = now
        let wanted = desiredSlot(running: runningSlot)
        guard wanted != runningSlot else { return }
        if listeners.isEmpty || running.phase != .ready {
            Launcher.printError("launcher: supervisor: the persisted choice now selects the \(wanted.rawValue) slot; replacing \(running.title).")
            kill(running.pid, SIGTERM)
            replacing = true
            serving?.killAt = monotonicNow() + Double(settings.graceMilliseconds) / 1000
            return
        }
        Launcher.printError("launcher: supervisor: the persisted choice now selects the \(wanted.rawValue) slot; starting it beside \(running.title), which serves until it is ready.")
        systemd?.send("RELOADING=1", "STATUS=Switching to the \(wanted.rawValue) slot (\(manifest[wanted].version))", "MONOTONIC_USEC=\(Int64(monotonicNow() * 1e6))")
        candidate = spawn(intended: wanted)
        if candidate == nil {
            lastSwitchFailure = SupervisorRecord.SwitchFailure(slot: wanted, at: currentUnixTime(), reason: "the \(wanted.rawValue) slot could not be started")
        }
        publish()
    }

    /// The slot the persisted choice selects now. The running build keeps running unless it
    /// was marked bad: using its last try is not a reason to replace it (the next start is).
    private func desiredSlot(running: BuildSlot?) -> BuildSlot {
        let loaded = StateStore(directory: directory).load()
        let record = HealthStore(directory: directory).load().record
        guard let unchecked = try? StartPlan.make(state: loaded, health: record, manifest: manifest,
                                                  forcedSlot: environmentValue("SWITCHBACK_SLOT"), applyHealth: false),
              let plan = try? StartPlan.make(state: loaded, health: record, manifest: manifest,
                                             forcedSlot: environmentValue("SWITCHBACK_SLOT")) else {
            return running ?? .current
        }
        let chosen = unchecked.decision.slot
        if chosen == running, !record.health(of: chosen, in: manifest).isBad { return chosen }
        return plan.decision.slot
    }

    private func fingerprints() -> [FileFingerprint?] {
        [directory.statePath, HealthStore(directory: directory).path].map { path in
            (try? FileSystem.status(path)).flatMap { $0.map(FileFingerprint.init) }
        }
    }

    /// inotify on the state directory: a changed choice is seen at once, not at the next poll.
    private func watchStateDirectory() {
        guard trusted else { return }
        inotifyFD = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotifyFD >= 0 else { return }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB)
        if inotify_add_watch(inotifyFD, directory.path, mask) < 0 {
            close(inotifyFD)
            inotifyFD = -1
        }
    }

    private func drainInotify() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(inotifyFD, $0.baseAddress, $0.count) }) > 0 {}
    }

    // MARK: Crashes of good builds

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
            // No child is serving: nothing writes the data while it is converted back.
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

    /// A child made ready by a probe or READY=1 (not by the SDK's good mark, which the
    /// child's launcher already wrote) is marked good, as the app would have.
    private func recordGoodMark(_ child: SupervisedChild, how: String) {
        guard trusted, let slot = child.slot, let build = child.build else { return }
        let identity = BuildIdentity(sha256: build, version: manifest[slot].version)
        let store = HealthStore(directory: directory)
        let known = store.load().record.health(of: identity, tries: manifest.trialTries)
        let session = StartSession(store: store, build: identity, tries: manifest.trialTries, known: known)
        if session.markGood(note: "ready: \(how)") != 0 {
            Launcher.printError("launcher: supervisor: \(child.title) is ready, but its good mark could not be recorded in \(directory.path).")
        }
    }

    // MARK: Records

    private func recordHistory(kind: HistoryEvent.Kind, from: BuildSlot, to: BuildSlot, reason: String) {
        guard trusted else { return }
        let event = HistoryEvent(time: currentUnixTime(), kind: kind, from: from, to: to, source: .auto, reason: reason)
        try? FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            try HistoryLog(path: directory.historyPath).append(event)
        }
    }

    private func statusLine(_ child: SupervisedChild) -> String {
        let slot = child.slot ?? child.intendedSlot ?? .current
        return "Running the \(slot.rawValue) slot (\(manifest[slot].version)), pid \(child.pid)"
    }

    private func publish() {
        guard trusted else { return }
        let now = monotonicNow()
        SupervisorRecord(pid: getpid(), startedAt: startedAt, childPID: serving?.pid, childSlot: serving?.slot,
                         childStartedAt: serving.map { currentUnixTime() - Int64(now - $0.startedAt) },
                         restarts: restarts, childReady: serving.map { $0.phase == .ready },
                         candidatePID: candidate?.pid, candidateSlot: candidate.flatMap { $0.slot ?? $0.intendedSlot },
                         switchFailure: lastSwitchFailure).save(in: directory)
    }

    private func finish(_ status: Int32) -> Never {
        if trusted { unlink(SupervisorRecord.path(in: directory)) }
        exit(status)
    }

    // MARK: Helpers

    private func update(pid: pid_t, _ body: (inout SupervisedChild) -> Void) {
        if serving?.pid == pid { body(&serving!) } else if candidate?.pid == pid { body(&candidate!) }
        else if let index = draining.firstIndex(where: { $0.pid == pid }) { body(&draining[index]) }
    }

    private func update(reportFD fd: Int32, _ body: (inout SupervisedChild) -> Void) {
        if serving?.reportFD == fd { body(&serving!) } else if candidate?.reportFD == fd { body(&candidate!) }
        else if let index = draining.firstIndex(where: { $0.reportFD == fd }) { body(&draining[index]) }
    }

    static func describe(_ status: Int32) -> String {
        switchback_exited(status) != 0 ? "exited with code \(switchback_exit_code(status))" : "was killed by signal \(switchback_term_signal(status))"
    }

    static func format(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        return tenths % 10 == 0 ? String(tenths / 10) : "\(tenths / 10).\(tenths % 10)"
    }
}

/// Seconds on the monotonic clock.
func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
