#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

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
    var signalFD: Int32 = -1
    var inotifyFD: Int32 = -1
    let notify: ChildNotifications
    let systemd: SystemdLink?
    var nextSystemdPing = 0.0
    /// The listening sockets every child gets at fds 3..., with their names.
    var listeners: [(fd: Int32, name: String, address: String)] = []

    var serving: SupervisedChild?
    var candidate: SupervisedChild?
    var draining: [SupervisedChild] = []
    var probe: (attempt: ReadinessProbe, pid: pid_t)?
    var nextProbeAt = 0.0
    /// Stop-first replacement (no listening sockets): the next child starts when this one exits.
    var replacing = false
    var lastSwitchFailure: SupervisorRecord.SwitchFailure?
    /// The health file as noticeGoodMarks last read it.
    var healthSeen: FileFingerprint?

    var restarts = 0
    var backoff: Int
    var restartAt: Double?
    var stopDeadline: Double?
    var servingStatus: Int32 = 0
    var watched: [FileFingerprint?] = []
    var crashes: CrashWindow
    let startedAt = currentUnixTime()
    let remoteCheck: RemoteCheckTrigger?

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

    func loop() -> Never {
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

    var children: [SupervisedChild] { [serving, candidate].compactMap { $0 } + draining }

    func nextTimeout() -> Int {
        let now = monotonicNow()
        // inotify wakes the loop for state changes; the poll period is the fallback.
        var timeout = Double(settings.pollMilliseconds) / 1000
        var deadlines = [restartAt, stopDeadline].compactMap { $0 }
        for child in children {
            deadlines += [child.killAt, child.terminateAt, child.drainAgainAt, child.phase == .starting && child.stop == nil ? child.deadline : nil].compactMap { $0 }
            if let signal = child.readySignal, child.phase == .starting { deadlines.append(signal.at + Double(settings.minReadyMilliseconds) / 1000) }
            if child.phase == .ready, settings.watchdogMilliseconds > 0 { deadlines.append(child.lastWatchdogPing + Double(settings.watchdogMilliseconds) / 1000) }
        }
        if let probe { deadlines.append(probe.attempt.deadline) } else if settings.readiness != .mark, unreadyChild != nil { deadlines.append(nextProbeAt) }
        if systemd?.watchdogPeriod != nil { deadlines.append(nextSystemdPing) }
        for deadline in deadlines { timeout = min(timeout, max(0, deadline - now)) }
        return Int((timeout * 1000).rounded(.up))
    }

    // MARK: Events

    func readReport(from fd: Int32) {
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
                // Its good mark may already be in the health file: look again.
                healthSeen = nil
                publish()
            }
        }
        if count <= 0 || named {
            close(fd)
            update(reportFD: fd) { $0.reportFD = -1 }
        }
    }

    func handleNotifications() {
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

    func handleSignals() {
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

    func reapChildren() {
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

    /// A child that exited: its last report read, its pipe closed, its probe stopped.
    func retire(_ role: ReferenceWritableKeyPath<Supervisor, SupervisedChild?>) -> SupervisedChild? {
        guard let reportFD = self[keyPath: role]?.reportFD else { return nil }
        if reportFD >= 0 { readReport(from: reportFD) }
        guard let child = self[keyPath: role] else { return nil }
        self[keyPath: role] = nil
        if child.reportFD >= 0 { close(child.reportFD) }
        cancelProbe(of: child.pid)
        return child
    }

    func servingExited(_ status: Int32) {
        guard let child = retire(\.serving) else { return }
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

    func candidateExited(_ status: Int32) {
        guard let child = retire(\.candidate) else { return }
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
    func switchFailed(_ child: SupervisedChild, why: String) {
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

    func probeFinished(_ outcome: ReadinessProbe.Outcome, pid: pid_t) {
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

    func tick() {
        let now = monotonicNow()
        if let deadline = stopDeadline, now >= deadline {
            for child in children { kill(child.pid, SIGKILL) }
        }
        for child in children {
            if let killAt = child.killAt, now >= killAt { kill(child.pid, SIGKILL) }
        }
        for index in draining.indices {
            if let again = draining[index].drainAgainAt, now >= again {
                kill(draining[index].pid, switchback_drain_signal())
                draining[index].drainAgainAt = nil
            }
            guard let terminateAt = draining[index].terminateAt, now >= terminateAt else { continue }
            kill(draining[index].pid, SIGTERM)
            draining[index].terminateAt = nil
            draining[index].killAt = now + Double(settings.graceMilliseconds) / 1000
        }
        if stopDeadline == nil {
            noticeGoodMarks(now: now)
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
        // A long-running app keeps its directive fresh: one stat per tick, a detached sync when
        // the marker's due time comes (RemoteSchedule: the interval with jitter, a backoff after
        // failures, a random wait before a first or overdue check, slept by the detached sync so
        // this loop never waits); an applied directive changes the state file, which the next lines see.
        if let problem = remoteCheck?.startInBackgroundIfDue() { Launcher.printError("launcher: supervisor: \(problem)") }
        watchPersistedChoice()
    }

    /// Unready children: the ready signal plus the minimum time makes them ready; the
    /// deadline stops them (SIGABRT first, for a backtrace).
    func checkStartingChildren(now: Double) {
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
    func checkStarting(_ child: SupervisedChild, now: Double, replacing running: BuildSlot?) -> (child: SupervisedChild, isReady: Bool)? {
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

    func childBecameReady(pid: pid_t) {
        cancelProbe(of: pid)
        if var child = candidate, child.pid == pid {
            // The switch: the new child serves; the old one stops gracefully.
            candidate = nil
            if var old = serving {
                // Out of the accept pool first: connections it accepted just before get their
                // requests read, so its graceful stop finishes them instead of dropping them.
                kill(old.pid, switchback_drain_signal())
                old.phase = .draining
                old.terminateAt = monotonicNow() + Double(settings.drainMilliseconds) / 1000
                old.drainAgainAt = monotonicNow() + Double(settings.drainMilliseconds) / 2000
                draining.append(old)
                Launcher.printError("launcher: supervisor: \(child.title) is ready (\(child.readySignal?.how ?? "ready")); stopping \(old.title) gracefully.")
            }
            child.phase = .ready
            serving = child
            lastSwitchFailure = nil
        }
        guard let serving, serving.pid == pid else { return }
        if let how = serving.readySignal?.how { recordGoodMark(serving, how: how) }
        systemd?.send("READY=1", "STATUS=\(statusLine(serving))", "MAINPID=\(getpid())")
        publish()
        // The choice may have changed again while the candidate started.
        watched = []
    }

    func checkWatchdog(now: Double) {
        guard settings.watchdogMilliseconds > 0, var child = serving, child.phase == .ready, child.stop == nil,
              now - child.lastWatchdogPing >= Double(settings.watchdogMilliseconds) / 1000 else { return }
        child.stop = .watchdog
        child.killAt = now + Self.backtraceSeconds
        serving = child
        kill(child.pid, SIGABRT)
        Launcher.printError("launcher: supervisor: \(child.title) sent no WATCHDOG=1 within \(settings.watchdogMilliseconds) ms (supervise.watchdog_ms); stopped with SIGABRT for a backtrace, counted as a crash.")
    }

    /// The probe runs against the one unready child, every interval, one attempt at a time.
    var unreadyChild: SupervisedChild? {
        [candidate, serving].compactMap { $0 }.first { $0.phase == .starting && $0.stop == nil && $0.readySignal == nil }
    }

    func runProbe(now: Double) {
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

    func cancelProbe(of pid: pid_t) {
        guard let current = probe, current.pid == pid else { return }
        current.attempt.cancel()
        if current.attempt.commandPID == nil { probe = nil }
    }

    func scheduleRestart() {
        restartAt = monotonicNow() + Double(backoff) / 1000
        // Settings are at most 2^31 - 1 ms (ValueRange.duration), but double without trapping
        // whatever a manifest made in code holds.
        let doubled = backoff.multipliedReportingOverflow(by: 2)
        backoff = doubled.overflow ? settings.backoffMaxMilliseconds : min(doubled.partialValue, settings.backoffMaxMilliseconds)
    }

    // MARK: Records

    func recordHistory(kind: SwitchHistoryEvent.Kind, from: BuildSlot, to: BuildSlot, reason: String) {
        guard trusted else { return }
        let event = SwitchHistoryEvent(time: currentUnixTime(), kind: kind, from: from, to: to, source: .auto, reason: reason)
        try? FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            try HistoryLog(path: directory.historyPath).append(event)
        }
    }

    func statusLine(_ child: SupervisedChild) -> String {
        let slot = child.slot ?? child.intendedSlot ?? .current
        return "Running the \(slot.rawValue) slot (\(manifest[slot].version)), pid \(child.pid)"
    }

    func publish() {
        guard trusted else { return }
        let now = monotonicNow()
        SupervisorRecord(pid: getpid(), startedAt: startedAt, childPID: serving?.pid, childSlot: serving?.slot,
                         childStartedAt: serving.map { currentUnixTime() - Int64(now - $0.startedAt) },
                         restarts: restarts, childReady: serving.map { $0.phase == .ready },
                         candidatePID: candidate?.pid, candidateSlot: candidate.flatMap { $0.slot ?? $0.intendedSlot },
                         switchFailure: lastSwitchFailure).save(in: directory)
    }

    func finish(_ status: Int32) -> Never {
        if trusted { try? FileSystem.remove(SupervisorRecord.path(in: directory)) }
        notify.remove()
        exit(status)
    }

    // MARK: Helpers

    func update(pid: pid_t, _ body: (inout SupervisedChild) -> Void) {
        if serving?.pid == pid { body(&serving!) } else if candidate?.pid == pid { body(&candidate!) }
        else if let index = draining.firstIndex(where: { $0.pid == pid }) { body(&draining[index]) }
    }

    func update(reportFD fd: Int32, _ body: (inout SupervisedChild) -> Void) {
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
