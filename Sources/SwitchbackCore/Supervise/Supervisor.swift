import SwitchbackFiles
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

    // MARK: - The parent: the driver of SupervisorMachine

    /// The release the supervisor acts for: the one it started with, then each release
    /// installed under it (Supervisor+Release.swift).
    var manifest: Manifest
    /// The bundle's path as the supervisor was started from it (a symlink a deploy flips
    /// stays a symlink): where a new release is looked for.
    let bundlePath: String
    /// The directory of the release in `manifest` (resolved), and where its launcher is in
    /// it: every child, planning run and conversion runs that release's own programs.
    var bundleRoot: String
    let launcherInBundle: String
    var launcherPath: String { bundleRoot + launcherInBundle }
    /// The manifest file as the release in `manifest` was read, and a changed one seen at the
    /// last check, which is adopted when the next check sees it unchanged.
    var releaseSeen: FileFingerprint?
    var releaseSettling: FileFingerprint?
    /// A manifest that could not be adopted: said once, looked at again when it changes.
    var releaseRefused: FileFingerprint?
    var nextReleaseCheck = 0.0
    let directory: StateDirectory
    let trusted: Bool
    let settings: SupervisorSettings
    let notify: ChildNotifications
    let systemd: SystemdLink?
    /// Rebuilt for a release installed under the supervisor whose `remote.*` settings are the same.
    var remoteCheck: RemoteCheckTrigger?
    let startedAt = currentUnixTime()
    /// Who this process is, for `SupervisorIdentity`: its start tick and its executable file.
    let startTicks = ProcessFacts.ownStartTicks()
    let executable = ProcessFacts.executable(getpid())
    /// The listening sockets every child gets at fds 3..., with their names.
    let listeners: [(fd: Int32, name: String, address: String)]
    /// Every decision; the rest of this class is I/O.
    var machine: SupervisorMachine

    var signalFD: Int32 = -1
    var inotifyFD: Int32 = -1
    var nextSystemdPing = 0.0
    /// Each child's report pipe, until it named its slot or exited.
    var reportFDs: [pid_t: Int32] = [:]
    /// The readiness probe attempt under way (`SupervisorMachine.probing` names its child).
    var probe: (attempt: ReadinessProbe, pid: pid_t)?
    /// The health file as noticeGoodMarks last read it.
    var healthSeen: FileFingerprint?
    /// The state and health files as the persisted choice was last acted on.
    var watched: [FileFingerprint?] = []
    /// Whether the manifest configures a probation (`analysis.*`): without, nothing of it is read.
    let hasAnalysis: Bool
    /// The analyzer of the probation under way, if it runs.
    var analyzer: Analyzer?
    /// The bake-window override as last read.
    var overrideSeen: FileFingerprint?
    /// The directive file (`remote.url=file://...`), watched through `inotifyFD`; see
    /// Supervisor+DirectiveFile.swift.
    let directiveFile: String?
    /// The inotify watch of the directive file's directory, -1 while there is none.
    var directiveWatch: Int32 = -1
    /// Whether something changed in that directory since the file was last compared.
    var directiveDirty = true
    /// The sync of the directive file under way, and the version it was started for.
    var directiveSync: (pid: pid_t, version: String)?
    /// The last version a sync was started for: never started twice for the same one.
    var directiveTried: String?

    init(manifest: Manifest, bundle: (path: String, root: String, launcher: String), directory: StateDirectory, trusted: Bool) {
        self.manifest = manifest
        bundlePath = bundle.path
        bundleRoot = bundle.root
        launcherInBundle = bundle.launcher
        releaseSeen = Self.manifestFingerprint(bundleRoot: bundle.path)
        self.directory = directory
        self.trusted = trusted
        settings = SupervisorSettings(manifest: manifest)
        remoteCheck = trusted ? RemoteCheckTrigger(manifest: manifest, directory: directory, bundleRoot: bundle.root) : nil
        directiveFile = remoteCheck?.settings.filePath
        if let problem = SupervisorSettings.problem(in: manifest) { Launcher.fail(problem) }
        if let problem = Analyzer.problem(in: manifest) { Launcher.fail(problem) }
        systemd = SystemdLink.take()
        do { notify = try ChildNotifications() } catch { Launcher.fail(error.message) }
        let listeners = Self.openListeners(settings.listen)
        self.listeners = listeners
        let shared = settings.readiness.address.map { address in listeners.contains { $0.address == address.description } } ?? false
        hasAnalysis = Analyzer.isConfigured(manifest)
        machine = SupervisorMachine(.init(settings: settings, hasListeners: !listeners.isEmpty, probeSharesListener: shared,
                                          currentVersion: manifest[.current].version, previousVersion: manifest[.previous].version,
                                          supervisorPID: getpid()))
        if hasAnalysis && trusted {
            overrideSeen = (try? FileSystem.status(ProbationRecord.overridePath(in: directory))).flatMap { $0.map(FileFingerprint.init) }
            machine.bakeWindowSeconds = bakeWindowSeconds()
            machine.resumable = loadProbationRecord()
            machine.configuration.comparesWithBaseline = manifest.settings["analysis.baseline"] == "true"
        }
    }

    /// Supervises until the app exits 0 or the supervisor is told to stop; exits with the
    /// child's status (its exit code, or 128 + the signal that killed it).
    public static func run(manifest: Manifest, bundleRoot: String, directory: StateDirectory, trusted: Bool) -> Never {
        Supervisor(manifest: manifest, bundle: invokedBundle(resolved: bundleRoot), directory: directory, trusted: trusted).loop()
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
        send(.start)
        while true {
            var fds = [pollfd(fd: signalFD, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: notify.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: inotifyFD, events: Int16(POLLIN), revents: 0)]
            let reports = Array(reportFDs.values)
            fds += reports.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let analyzerOutput = analyzer.map(\.output) ?? -1
            if analyzerOutput >= 0 { fds.append(pollfd(fd: analyzerOutput, events: Int16(POLLIN), revents: 0)) }
            let probeIndex = fds.count
            if let probe, let events = probe.attempt.events { fds.append(pollfd(fd: probe.attempt.fd, events: events, revents: 0)) }
            _ = poll(&fds, nfds_t(fds.count), Int32(nextTimeout()))
            if fds[0].revents != 0 { handleSignals() }
            if fds[1].revents != 0 { handleNotifications() }
            // A change in the state directory only wakes the loop: tick() compares the files.
            if fds[2].revents != 0 { drainInotify() }
            for entry in fds[3..<(3 + reports.count)] where entry.revents != 0 { readReport(from: entry.fd) }
            if analyzerOutput >= 0, fds[3 + reports.count].revents != 0, analyzer?.output == analyzerOutput { readAnalyzer() }
            if fds.count > probeIndex, fds[probeIndex].revents != 0, let current = probe {
                if let outcome = current.attempt.advance() { probeFinished(outcome, pid: current.pid) }
            }
            tick()
        }
    }

    /// Feeds one event to the machine and performs the actions it returns, in order.
    func send(_ event: SupervisorMachine.Event) {
        let actions = machine.handle(event, at: .init(monotonic: monotonicNow(), unix: currentUnixTime(), unixMilliseconds: RemoteSchedule.nowMilliseconds()))
        for action in actions { perform(action) }
    }

    func perform(_ action: SupervisorMachine.Action) {
        switch action {
        case .spawn(let launch):
            switch launch {
            case .candidate(let slot), .stopFirst(let slot):
                send(spawn(launch, intended: slot))
            case .restore(let slot):
                // Forced for this start: the launcher's own start path puts the data back in
                // this build's format, whatever the flag says.
                send(spawn(launch, intended: slot, forcedSlot: slot))
            case .first, .restart, .replacement:
                send(spawn(launch, intended: desiredSlot(running: nil)))
            }
        case .kill(let pid, let signal):
            kill(pid, signal)
        case .drain(let pid):
            kill(pid, switchback_drain_signal())
        case .startProbe(let pid):
            let attempt = ReadinessProbe(settings.readiness, childPID: pid, timeout: 1)
            if let outcome = attempt.immediate {
                send(.probeFinished(pid: pid, outcome))
            } else {
                probe = (attempt, pid)
            }
        case .cancelProbe(let pid):
            guard let current = probe, current.pid == pid else {
                send(.probeCancelled(pid: pid))
                return
            }
            current.attempt.cancel()
            // A command is reaped like a child: its exit finishes the probe.
            if current.attempt.commandPID == nil {
                probe = nil
                send(.probeCancelled(pid: pid))
            }
        case .say(let text):
            Launcher.printError("launcher: supervisor: \(text)")
        case .notifySystemd(let lines):
            if let systemd { SystemdLink.send(lines.joined(separator: "\n"), to: systemd.socket) }
        case .recordHistory(let kind, let from, let to, let reason, let source):
            recordHistory(kind: kind, from: from, to: to, reason: reason, source: source)
        case .recordGoodMark(let child, let how):
            recordGoodMark(child, how: how)
        case .countCrash(let slot, let build):
            countCrash(slot: slot, build: build)
        case .markBad(let slot, let build, let why, let by):
            markBad(slot: slot, build: build, why: why, by: by)
        case .publish:
            publish()
        case .acknowledgeChoice:
            watched = fingerprints()
        case .reconsiderChoice:
            watched = []
        case .startAnalyzer(let record):
            startAnalyzer(record)
        case .stopAnalyzer:
            stopAnalyzer()
        case .tellAnalyzer(let line):
            tellAnalyzer(line)
        case .recordProbation(let record):
            recordProbation(record)
        case .markGoodAfterProbation(let slot, let build, let note):
            markGoodAfterProbation(slot: slot, build: build, note: note)
        case .convert(let request):
            convert(request)
        case .exit(let code):
            finish(code)
        }
    }

    func nextTimeout() -> Int {
        let now = monotonicNow()
        // inotify wakes the loop for state changes; the poll period is the fallback.
        var timeout = Double(settings.pollMilliseconds) / 1000
        var deadlines = [machine.nextDeadline].compactMap { $0 }
        if let probe { deadlines.append(probe.attempt.deadline) }
        if systemd?.watchdogPeriod != nil { deadlines.append(nextSystemdPing) }
        if trusted, settings.releaseCheckMilliseconds > 0 { deadlines.append(nextReleaseCheck) }
        for deadline in deadlines { timeout = min(timeout, max(0, deadline - now)) }
        return Int((timeout * 1000).rounded(.up))
    }

    // MARK: Events

    func readReport(from fd: Int32) {
        guard let pid = reportFDs.first(where: { $0.value == fd })?.key else { return }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        var named = false
        if count > 0 {
            let words = String(decoding: buffer[0..<count], as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
            if words.count >= 2, let slot = BuildSlot(rawValue: String(words[0])) {
                named = true
                // Its good mark may already be in the health file: look again.
                healthSeen = nil
                send(.reported(pid: pid, slot: slot, build: String(words[1])))
            }
        }
        if count <= 0 || named {
            close(fd)
            reportFDs[pid] = nil
        }
    }

    func handleNotifications() {
        for message in notify.receive() {
            for (key, value) in message.fields {
                switch key {
                case "READY" where value == "1":
                    send(.saidReady(pid: message.pid))
                case "EXTEND_TIMEOUT_USEC":
                    if let microseconds = Int(value) { send(.extendedTimeout(pid: message.pid, microseconds: microseconds)) }
                case "WATCHDOG" where value == "1":
                    send(.watchdogPing(pid: message.pid))
                case "X_SWITCHBACK_ADOPTED":
                    send(.adoptedSocket(pid: message.pid))
                case "X_SWITCHBACK_IDLE" where value == "1":
                    send(.drained(pid: message.pid))
                case "X_SWITCHBACK_FAILURES":
                    if let count = Int(value), count >= 0 { send(.appFailures(pid: message.pid, count: count)) }
                case "X_SWITCHBACK_BAD":
                    send(.appBad(pid: message.pid, reason: value.isEmpty ? "no reason given" : OutsideText(value, limit: Limits.reasonBytes).text))
                default:
                    break
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
            } else {
                send(.signal(signal))
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
                continue
            }
            if analyzer?.pid == pid {
                analyzerExited(status: status)
                continue
            }
            if directiveSync?.pid == pid {
                directiveSyncExited()
                continue
            }
            // Its last report first: the slot it ran is in it.
            if let fd = reportFDs[pid] {
                readReport(from: fd)
                if let fd = reportFDs.removeValue(forKey: pid) { close(fd) }
            }
            let how: SupervisorMachine.ExitStatus = switchback_exited(status) != 0
                ? .exited(switchback_exit_code(status)) : .killed(signal: switchback_term_signal(status))
            send(.exited(pid: pid, how))
        }
    }

    func probeFinished(_ outcome: ReadinessProbe.Outcome, pid: pid_t) {
        probe = nil
        send(.probeFinished(pid: pid, outcome))
    }

    // MARK: Timers

    func tick() {
        let now = monotonicNow()
        if !machine.isStopping {
            noticeGoodMarks()
            if let current = probe, now >= current.attempt.deadline {
                current.attempt.cancel()
                probeFinished(.failed("timed out"), pid: current.pid)
            }
        }
        send(.tick)
        if let period = systemd?.watchdogPeriod, now >= nextSystemdPing {
            systemd?.send("WATCHDOG=1")
            nextSystemdPing = now + period
        }
        // A long-running app keeps its directive fresh: one stat per tick, a detached sync when
        // the marker's due time comes (RemoteSchedule: the interval with jitter, a backoff after
        // failures, a random wait before a first or overdue check, slept by the detached sync so
        // this loop never waits); an applied directive changes the state file, which the next lines see.
        // A directive file instead: read at once when inotify says its directory changed
        // and one stat says the file did (Supervisor+DirectiveFile.swift).
        if directiveFile != nil {
            noticeDirectiveFile()
        } else if let problem = remoteCheck?.startInBackgroundIfDue() {
            Launcher.printError("launcher: supervisor: \(problem)")
        }
        if hasAnalysis {
            noticeBakeWindow()
            consumeProbationRequest()
        }
        noticeNewRelease()
        consumeSwitchRequest()
        watchPersistedChoice()
    }

    // MARK: Records

    func recordHistory(kind: SwitchHistoryEvent.Kind, from: BuildSlot, to: BuildSlot, reason: String, source: ChoiceSource = .auto) {
        guard trusted else { return }
        let event = SwitchHistoryEvent(time: currentUnixTime(), kind: kind, from: from, to: to, source: source, reason: reason)
        try? FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            try HistoryLog(path: directory.historyPath).append(event)
        }
    }

    func publish() {
        guard trusted else { return }
        let now = monotonicNow()
        let serving = machine.serving, candidate = machine.candidate
        var record = SupervisorRecord(pid: getpid(), startedAt: startedAt, childPID: serving?.pid, childSlot: serving?.slot,
                                      childStartedAt: serving.map { currentUnixTime() - Int64(now - $0.startedAt) },
                                      restarts: machine.restarts, childReady: serving.map { $0.phase == .ready },
                                      candidatePID: candidate?.pid, candidateSlot: candidate.flatMap { $0.slot ?? $0.intendedSlot },
                                      switchFailure: machine.switchFailure,
                                      pause: machine.pause.map { $0.record(machine.configuration, pausedMilliseconds: nil, at: $0.beganAt / 1000, readyAt: nil) },
                                      lastSwitch: machine.lastSwitch)
        record.bundle = bundleRoot
        record.startTicks = startTicks
        record.executableDevice = executable?.device
        record.executableInode = executable?.inode
        record.save(in: directory)
    }

    func finish(_ status: Int32) -> Never {
        if trusted { try? FileSystem.remove(SupervisorRecord.path(in: directory)) }
        // The record stays baking: a supervisor started again resumes the window.
        stopAnalyzer()
        notify.remove()
        exit(status)
    }
}

/// Seconds on the monotonic clock.
package func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
