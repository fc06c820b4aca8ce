import SwitchbackFiles
#if canImport(Glibc)
import Glibc
#endif

/// Every decision of supervise mode, as a value: which children exist and what each is
/// doing, when the next restart comes, when a switch happens or fails. `handle(_:at:)` takes
/// one event (a child spawned, said it was ready, exited; a signal; a timer tick; the
/// persisted choice selecting a slot) and returns the actions for the driver (`Supervisor`)
/// to perform in order. It does no I/O and reads no clock: time comes with each event, so
/// every transition is tested without processes or sleeps (docs/design.md, "The supervisor").
struct SupervisorMachine {
    /// What the supervisor is doing. Children being drained after a live switch are kept
    /// apart (`draining`): they leave in every state.
    enum State: Equatable {
        /// Before the first start.
        case idle
        /// One child, starting or ready, serving.
        case running(SupervisedChild)
        /// A live switch: the candidate starts beside the serving child on the same sockets.
        case switching(serving: SupervisedChild, candidate: SupervisedChild)
        /// A stop-first switch (no listening sockets, or the child was not ready): the child
        /// was sent SIGTERM; the wanted slot starts when it exits.
        case replacing(SupervisedChild)
        /// A stop-first switch (the data is converted for the target): no child of another
        /// build serves while connections wait in the queue (SupervisorMachine+Pause).
        case pausing(Pause)
        /// No child: the next start is due at `until` (monotonic seconds).
        case backingOff(until: Double)
        /// SIGTERM or SIGINT: the children were told to stop; SIGKILL at `deadline`.
        case stopping(deadline: Double, serving: SupervisedChild?, candidate: SupervisedChild?)
        /// Done: the driver exits with the code.
        case stopped(exitCode: Int32)
    }

    /// Why a child is started; the driver hands it back with the outcome.
    enum Launch: Equatable {
        /// The first child.
        case first
        /// After a crash or a failed spawn, when the backoff ran out.
        case restart
        /// After a stop-first switch: the replaced child exited.
        case replacement
        /// A live switch to the slot.
        case candidate(BuildSlot)
        /// The target of a stop-first switch, once the old child exited (and the data was converted).
        case stopFirst(BuildSlot)
        /// The old slot again, forced for this start, after the target of a stop-first switch failed.
        case restore(BuildSlot)
    }

    /// How a child ended, as `waitpid` said.
    enum ExitStatus: Equatable {
        case exited(Int32)
        case killed(signal: Int32)

        /// Its exit code, or 128 + the signal that killed it: what the supervisor exits with.
        var code: Int32 {
            switch self {
            case .exited(let code): return code
            case .killed(let signal): return 128 + signal
            }
        }

        var description: String {
            switch self {
            case .exited(let code): return "exited with code \(code)"
            case .killed(let signal): return "was killed by signal \(signal)"
            }
        }
    }

    /// The two clocks an event happened at: monotonic seconds for timers, Unix seconds for
    /// what is recorded.
    struct Moment: Equatable {
        var monotonic: Double
        var unix: Int64
        /// The same Unix time in milliseconds (the probation's window); `unix` * 1000 unless given.
        var unixMilliseconds: Int64

        init(monotonic: Double, unix: Int64, unixMilliseconds: Int64? = nil) {
            self.monotonic = monotonic
            self.unix = unix
            self.unixMilliseconds = unixMilliseconds ?? unix * 1000
        }
    }

    enum Event: Equatable {
        /// The supervisor starts.
        case start
        /// The driver started a child for `launch`; `goodBuilds` is what the health file
        /// called good just before.
        case spawned(Launch, pid: pid_t, intendedSlot: BuildSlot?, goodBuilds: Set<String>)
        /// Starting a child failed (posix_spawn's error, as a phrase).
        case spawnFailed(Launch, error: String)
        /// A child named its slot and build on its report pipe.
        case reported(pid: pid_t, slot: BuildSlot, build: String)
        /// sd_notify from a child: `READY=1`.
        case saidReady(pid: pid_t)
        /// sd_notify: `EXTEND_TIMEOUT_USEC=`.
        case extendedTimeout(pid: pid_t, microseconds: Int)
        /// sd_notify: `WATCHDOG=1`.
        case watchdogPing(pid: pid_t)
        /// sd_notify: `X_SWITCHBACK_ADOPTED=1`, the child holds an inherited listening socket.
        case adoptedSocket(pid: pid_t)
        /// sd_notify: `X_SWITCHBACK_IDLE=1`, from the launcher in a draining child: none of the
        /// connections it accepted holds work any more (CSwitchbackListen's drain watcher).
        case drained(pid: pid_t)
        /// The builds the health file calls good, read again because it changed.
        case goodBuilds(Set<String>)
        /// The readiness probe of a child finished.
        case probeFinished(pid: pid_t, ReadinessProbe.Outcome)
        /// The probe of a child was cancelled and nothing of it runs any more.
        case probeCancelled(pid: pid_t)
        /// A child exited.
        case exited(pid: pid_t, ExitStatus)
        /// A signal to the supervisor other than SIGCHLD.
        case signal(Int32)
        /// Time passed: the timers are looked at.
        case tick
        /// The persisted choice changed and now selects this slot (`desiredSlot(running:)`),
        /// by the path `LaunchPlanner.switchPath` chose.
        /// `fallback`: no choice selects it, the planner does (both builds are bad): the reason,
        /// which the history records as a fallback, as the launcher's own fallbacks are.
        case choiceSelects(BuildSlot, path: SwitchPath = .startFirst, fallback: String? = nil)
        /// `Switcher.perform` handed a switch to the previous slot over (`switch.request`), or
        /// the supervisor's own verdict needs one: stop-first when the data must be converted back
        /// (`Switcher.pathBack`); start-first, the switch runs at once.
        case switchRequested(SwitchRequest, path: SwitchPath)
        /// The driver's answer to `.convert`: nil when the flag now selects the target, else
        /// why the switch did not happen.
        case converted(failure: String?)
        /// A build the health file calls good exited abnormally (the driver's answer to
        /// `countCrash`).
        case goodBuildCrashed(slot: BuildSlot, build: String)
        /// The bake window (`analysis.window_s`, or the operator's override) changed.
        case bakeWindow(seconds: Int)
        /// The analyzer's `measurement NAME PHASE SENTENCE`.
        case analysisMeasured(check: String, phase: String, sentence: String)
        /// The analyzer's `verdict WORD SENTENCE`, read back (an unknown word is inconclusive).
        case analysisVerdict(AnalysisVerdict)
        /// The analyzer exited, or could not be started, without a verdict (why, as a phrase).
        case analyzerExited(String)
        /// sd_notify: `X_SWITCHBACK_FAILURES=N`, the app's cumulative failure count.
        case appFailures(pid: pid_t, count: Int)
        /// sd_notify: `X_SWITCHBACK_BAD=REASON`.
        case appBad(pid: pid_t, reason: String)
        /// `rollbackctl promote` / `abort`.
        case probationRequest(ProbationRequest)
        /// A new release was installed at the bundle's path (SupervisorMachine+Release).
        case releaseInstalled(InstalledRelease)
    }

    enum Action: Equatable {
        /// Start a child; its intended slot is the candidate's, else `desiredSlot(running: nil)`.
        /// The driver answers with `.spawned` or `.spawnFailed`.
        case spawn(Launch)
        case kill(pid: pid_t, signal: Int32)
        /// The drain signal: out of the accept pool.
        case drain(pid: pid_t)
        case startProbe(pid: pid_t)
        /// The driver answers with `.probeCancelled` once nothing of the probe runs.
        case cancelProbe(pid: pid_t)
        /// A line on stderr after "launcher: supervisor: ".
        case say(String)
        case notifySystemd([String])
        /// `source`: `auto` for the supervisor's own events, `cli` for what an operator asked.
        case recordHistory(SwitchHistoryEvent.Kind, from: BuildSlot, to: BuildSlot, reason: String, source: ChoiceSource = .auto)
        /// Mark the ready child's build good, as the app would have (when trusted).
        case recordGoodMark(SupervisedChild, how: String)
        /// A child of a build exited abnormally: the driver answers `goodBuildCrashed` when the
        /// health file calls the build good.
        case countCrash(slot: BuildSlot, build: String)
        /// A good build crashed `crash_limit` times within the window, or failed its bake
        /// window: record it bad (when trusted) and choose the other slot when it is not bad
        /// too. `by` is `.auto` for the supervisor's own verdicts and `.cli` for an operator's
        /// `rollbackctl abort`, an explicit rejection that automatic rollback never undoes.
        case markBad(slot: BuildSlot, build: String, why: String, by: ChoiceSource = .auto)
        /// Save the supervisor record from `serving`, `candidate`, `restarts`, `switchFailure`.
        case publish
        /// The persisted choice as it is now has been acted on: look again when it changes.
        case acknowledgeChoice
        /// Look at the persisted choice again at the next tick, changed or not.
        case reconsiderChoice
        /// Start `rollbackctl-remote analyze` for the probation; the driver answers
        /// `.analyzerExited` when it cannot.
        case startAnalyzer(ProbationRecord)
        /// Stop the analyzer (its verdict is no longer wanted).
        case stopAnalyzer
        /// A frame on the analyzer's stdin (`app-failures N`, `app-bad REASON`).
        case tellAnalyzer(AnalyzerMessage)
        /// Save the probation record (and refresh the metrics).
        case recordProbation(ProbationRecord)
        /// The build passed its probation (or was promoted): marked good with the note.
        case markGoodAfterProbation(slot: BuildSlot, build: String, note: String)
        /// Run the switch to the previous slot (`Switcher.perform`, its data converted back)
        /// now that no child of the current build serves; the driver answers the request and
        /// the machine (`.converted`).
        case convert(SwitchRequest)
        /// Remove the record and exit with the code.
        case exit(Int32)
    }

    /// What the machine is told once: the settings, the sockets, the versions.
    struct Configuration {
        var settings: SupervisorSettings
        /// Whether children get listening sockets (a switch then starts the new child first).
        var hasListeners: Bool
        /// Whether the readiness probe's address is one of the shared listening sockets.
        var probeSharesListener: Bool
        var currentVersion: String
        var previousVersion: String
        /// The supervisor's own pid, for `MAINPID=`.
        var supervisorPID: pid_t
        /// The bake window at the start (`analysis.window_s`, or the override); 0: no probation.
        var bakeWindowSeconds = 0
        /// The probation record found at the start: resumed when its build serves again.
        var resumable: ProbationRecord? = nil
        /// `analysis.baseline=true`: a start-first switch keeps the build it replaces serving
        /// beside the new one for the bake window, and the analysis compares the two.
        var comparesWithBaseline = false

        func version(_ slot: BuildSlot) -> String { slot == .current ? currentVersion : previousVersion }
    }

    /// How long a stopped child gets to write its backtrace before SIGKILL.
    static let backtraceSeconds = 5.0

    /// Changed only by a release installed under the supervisor (its versions).
    var configuration: Configuration
    // Changed only by handle(_:at:) and its transitions (here and in +Transitions).
    var state = State.idle
    /// Old children leaving after a live switch.
    var draining: [SupervisedChild] = []
    /// The child of the build a start-first switch replaced, kept serving beside the new one
    /// for its bake window (`analysis.baseline=true`, SupervisorMachine+Baseline).
    var baseline: SupervisedChild?
    /// Abnormal exits so far (published).
    var restarts = 0
    /// The next restart delay, in milliseconds.
    var backoff: Int
    /// What the supervisor exits with when it is told to stop: the last serving child's status.
    var exitStatus: Int32 = 0
    /// The last live switch that did not happen, until one does.
    var switchFailure: SupervisorRecord.SwitchFailure?
    /// The last stop-first switch that happened (published).
    var lastSwitch: SupervisorRecord.LastSwitch?
    /// The child restored after a failed stop-first switch: its readiness acknowledges the
    /// choice instead of reconsidering it (the supervisor does not retry on its own).
    var keepsChoice: pid_t?
    /// The child whose readiness probe runs (one attempt at a time).
    var probing: pid_t?
    var nextProbeAt = 0.0
    /// Crashes of good builds within the window.
    var crashes: CrashWindow
    /// The probation of the serving build.
    var probation = Probation.none
    /// The bake window a new probation gets, in seconds (0: none).
    var bakeWindowSeconds: Int
    /// The record of a probation from before the supervisor started, until a child of its
    /// build or of another became ready.
    var resumable: ProbationRecord?

    init(_ configuration: Configuration) {
        self.configuration = configuration
        bakeWindowSeconds = configuration.bakeWindowSeconds
        resumable = configuration.resumable
        backoff = configuration.settings.backoffInitialMilliseconds
        crashes = CrashWindow(limit: configuration.settings.crashLimit, windowMilliseconds: configuration.settings.crashWindowMilliseconds)
    }

    var settings: SupervisorSettings { configuration.settings }

    // MARK: - Queries

    /// The child that serves (or is being stopped), if any.
    var serving: SupervisedChild? {
        switch state {
        case .running(let child), .switching(let child, _), .replacing(let child): return child
        case .stopping(_, let child, _): return child
        case .pausing(let pause):
            if case .starting(let child) = pause.step { return child }
            return nil
        case .idle, .backingOff, .stopped: return nil
        }
    }

    /// The new child of a live switch, if any.
    var candidate: SupervisedChild? {
        switch state {
        case .switching(_, let child): return child
        case .stopping(_, _, let child): return child
        default: return nil
        }
    }

    var children: [SupervisedChild] { [serving, candidate, baseline].compactMap { $0 } + draining }

    var isStopping: Bool {
        if case .stopping = state { return true }
        return false
    }

    /// The slot of the serving child when the persisted choice is to be watched: one ready or
    /// starting child that named its slot, no switch under way, not stopping.
    var watchedSlot: BuildSlot? {
        guard case .running(let child) = state, child.stop == nil else { return nil }
        return child.slot
    }

    /// Whether a starting child waits for a good mark of its build (the health file is worth
    /// reading).
    var awaitsGoodMark: Bool {
        !isStopping && children.contains { $0.phase == .starting && $0.stop == nil && $0.readySignal == nil && $0.build != nil }
    }

    /// The one unready child a probe runs against: the candidate first.
    var unreadyChild: SupervisedChild? {
        [candidate, serving].compactMap { $0 }.first { $0.phase == .starting && $0.stop == nil && $0.readySignal == nil }
    }

    /// The machine's next timer (monotonic seconds), if any.
    var nextDeadline: Double? {
        var deadlines: [Double] = []
        switch state {
        case .backingOff(let until): deadlines.append(until)
        case .stopping(let deadline, _, _): deadlines.append(deadline)
        default: break
        }
        for child in children {
            deadlines += [child.killAt, child.terminateAt, child.drainAgainAt,
                          child.phase == .starting && child.stop == nil ? child.deadline : nil].compactMap { $0 }
            if let signal = child.readySignal, child.phase == .starting { deadlines.append(signal.at + Double(settings.minReadyMilliseconds) / 1000) }
            if child.phase == .ready, settings.watchdogMilliseconds > 0 { deadlines.append(child.lastWatchdogPing + Double(settings.watchdogMilliseconds) / 1000) }
        }
        if probing == nil, settings.readiness != .mark, unreadyChild != nil { deadlines.append(nextProbeAt) }
        if let deadline = probationDeadline { deadlines.append(deadline) }
        return deadlines.min()
    }

    // MARK: - Events

    mutating func handle(_ event: Event, at now: Moment) -> [Action] {
        if case .stopped = state { return [] }
        switch event {
        case .start:
            guard case .idle = state else { return [] }
            return [.spawn(.first)]
        case .spawned(let launch, let pid, let intended, let good):
            return spawned(launch, pid: pid, intended: intended, good: good, now: now)
        case .spawnFailed(let launch, let error):
            return spawnFailed(launch, error: error, now: now)
        case .reported(let pid, let slot, let build):
            let found = update(pid) {
                $0.slot = slot
                $0.build = build
            }
            return found ? [.publish] : []
        case .saidReady(let pid):
            update(pid) { child in
                if child.readySignal == nil { child.readySignal = .init(at: now.monotonic, how: "it said it was ready") }
            }
            return []
        case .extendedTimeout(let pid, let microseconds):
            update(pid) { child in
                if child.phase == .starting, let deadline = child.deadline {
                    child.deadline = max(deadline, now.monotonic + Double(min(microseconds, Int(Int32.max) * 1000)) / 1e6)
                }
            }
            return []
        case .watchdogPing(let pid):
            update(pid) { $0.lastWatchdogPing = now.monotonic }
            return []
        case .adoptedSocket(let pid):
            update(pid) { $0.hasAdoptedSocket = true }
            return []
        case .drained(let pid):
            return drainEnded(pid: pid, now: now)
        case .goodBuilds(let good):
            for child in [serving, candidate].compactMap({ $0 }) {
                guard child.phase == .starting, child.stop == nil, child.readySignal == nil, let build = child.build,
                      good.contains(build), !child.goodBuildsAtStart.contains(build) else { continue }
                update(child.pid) { $0.readySignal = .init(at: now.monotonic, how: "it marked itself good") }
            }
            return []
        case .probeFinished(let pid, let outcome):
            probeFinished(pid: pid, outcome: outcome, now: now)
            return []
        case .probeCancelled(let pid):
            if probing == pid { probing = nil }
            return []
        case .exited(let pid, let status):
            return exited(pid: pid, status: status, now: now)
        case .signal(let signal):
            return received(signal, now: now)
        case .tick:
            return tick(now: now)
        case .choiceSelects(let wanted, let path, let fallback):
            let from = serving?.slot
            let actions = choiceSelects(wanted, path: path, now: now)
            // The switch is the planner's, not a writer's: nobody else records it.
            guard let fallback, let from, !actions.isEmpty else { return actions }
            return [.recordHistory(.fallback, from: from, to: wanted, reason: fallback)] + actions
        case .switchRequested(let request, let path):
            return switchRequested(request, path: path, now: now)
        case .converted(let failure):
            return converted(failure: failure, now: now)
        case .goodBuildCrashed(let slot, let build):
            guard crashes.record(build: build, at: Int64(now.monotonic * 1000)) else { return [] }
            let why = "crashed \(settings.crashLimit) times within \(settings.crashWindowMilliseconds / 1000) s after it was marked good"
            return [.markBad(slot: slot, build: build, why: why)]
        case .bakeWindow(let seconds):
            bakeWindowSeconds = max(0, seconds)
            return []
        case .analysisMeasured(let check, let phase, let sentence):
            return analysisMeasured(check: check, phase: phase, sentence: sentence, now: now)
        case .analysisVerdict(let verdict):
            return analysisVerdict(verdict, now: now)
        case .analyzerExited(let why):
            return analyzerGone(why, now: now)
        case .appFailures(let pid, let count):
            return appSignal(pid: pid, message: .appFailures(count))
        case .appBad(let pid, let reason):
            return appSignal(pid: pid, message: .appBad(reason: OutsideText(reason, limit: 512)))
        case .probationRequest(let request):
            return probationRequested(request, now: now)
        case .releaseInstalled(let release):
            return releaseBaseline(because: "a release was installed", now: now) + releaseInstalled(release)
        }
    }

    private mutating func spawned(_ launch: Launch, pid: pid_t, intended: BuildSlot?, good: Set<String>, now: Moment) -> [Action] {
        let deadline = settings.startDeadlineMilliseconds > 0 ? now.monotonic + Double(settings.startDeadlineMilliseconds) / 1000 : nil
        let child = SupervisedChild(pid: pid, intendedSlot: intended, startedAt: now.monotonic, deadline: deadline, goodBuildsAtStart: good)
        nextProbeAt = now.monotonic
        switch launch {
        case .first:
            state = .running(child)
            return []
        case .restart, .replacement:
            state = .running(child)
            return [.publish]
        case .stopFirst, .restore:
            return pauseSpawned(launch, child: child, error: nil, now: now)
        case .candidate:
            guard case .running(let serving) = state else { return [.kill(pid: pid, signal: SIGKILL)] }
            state = .switching(serving: serving, candidate: child)
            return [.publish]
        }
    }

    private mutating func spawnFailed(_ launch: Launch, error: String, now: Moment) -> [Action] {
        let said = Action.say("starting the app failed: \(error); retrying in \(backoff) ms.")
        switch launch {
        case .first:
            scheduleRestart(now: now)
            return [said]
        case .restart, .replacement:
            scheduleRestart(now: now)
            return [said, .publish]
        case .candidate(let wanted):
            switchFailure = .init(slot: wanted, at: now.unix, reason: "the \(wanted.rawValue) slot could not be started")
            return [said, .publish]
        case .stopFirst, .restore:
            return pauseSpawned(launch, child: nil, error: error, now: now)
        }
    }

    private mutating func probeFinished(pid: pid_t, outcome: ReadinessProbe.Outcome, now: Moment) {
        probing = nil
        nextProbeAt = now.monotonic + Double(settings.probeIntervalMilliseconds) / 1000
        guard outcome == .passed else { return }
        // A probe of a shared address answers for a new child only once it holds the socket:
        // until then the child it replaces is the one answering.
        let alone = serving?.pid == pid && candidate == nil
        let shared = configuration.probeSharesListener
        let how = "\(settings.readiness) passed"
        update(pid) { child in
            if child.readySignal == nil, !shared || alone || child.hasAdoptedSocket {
                child.readySignal = .init(at: now.monotonic, how: how)
            }
        }
    }

    private mutating func choiceSelects(_ wanted: BuildSlot, path: SwitchPath, now: Moment) -> [Action] {
        if let actions = baselineChoice(wanted, now: now) { return actions }
        guard case .running(var running) = state, let runningSlot = running.slot, running.stop == nil,
              wanted != runningSlot || running.outdatedVersion != nil else { return [] }
        if case .stopFirst(let why) = path { return pauseForChoice(running, wanted: wanted, why: why, now: now) }
        if !configuration.hasListeners || running.phase != .ready {
            running.killAt = now.monotonic + Double(settings.graceMilliseconds) / 1000
            state = .replacing(running)
            return [.say("the persisted choice now selects the \(wanted.rawValue) slot; replacing \(running.title)."),
                    .kill(pid: running.pid, signal: SIGTERM)]
        }
        return [.say("the persisted choice now selects the \(wanted.rawValue) slot; starting it beside \(running.title), which serves until it is ready."),
                .notifySystemd(["RELOADING=1", "STATUS=Switching to the \(wanted.rawValue) slot (\(configuration.version(wanted)))",
                                "MONOTONIC_USEC=\(Int64(now.monotonic * 1e6))"]),
                .spawn(.candidate(wanted))]
    }

    private mutating func received(_ signal: Int32, now: Moment) -> [Action] {
        guard signal == SIGTERM || signal == SIGINT else {
            return serving.map { [.kill(pid: $0.pid, signal: signal)] } ?? []
        }
        let all = children
        guard !all.isEmpty else {
            state = .stopped(exitCode: 128 + signal)
            return [.exit(128 + signal)]
        }
        var actions: [Action] = [.notifySystemd(["STOPPING=1"])]
        actions += all.map { .kill(pid: $0.pid, signal: signal) }
        if let probing { actions.append(.cancelProbe(pid: probing)) }
        if !isStopping {
            state = .stopping(deadline: now.monotonic + Double(settings.graceMilliseconds) / 1000, serving: serving, candidate: candidate)
        }
        return actions
    }

    // MARK: Helpers

    /// Applies `body` to the child with `pid`, wherever it is; false when there is none.
    @discardableResult
    mutating func update(_ pid: pid_t, _ body: (inout SupervisedChild) -> Void) -> Bool {
        switch state {
        case .running(var child) where child.pid == pid:
            body(&child)
            state = .running(child)
            return true
        case .replacing(var child) where child.pid == pid:
            body(&child)
            state = .replacing(child)
            return true
        case .switching(var serving, var candidate) where serving.pid == pid || candidate.pid == pid:
            if serving.pid == pid { body(&serving) } else { body(&candidate) }
            state = .switching(serving: serving, candidate: candidate)
            return true
        case .pausing(var pause) where pause.step.child?.pid == pid:
            guard case .starting(var child) = pause.step else { return false }
            body(&child)
            pause.step = .starting(child)
            state = .pausing(pause)
            return true
        case .stopping(let deadline, var serving, var candidate) where serving?.pid == pid || candidate?.pid == pid:
            if serving?.pid == pid { body(&serving!) } else { body(&candidate!) }
            state = .stopping(deadline: deadline, serving: serving, candidate: candidate)
            return true
        default:
            if var held = baseline, held.pid == pid {
                body(&held)
                baseline = held
                return true
            }
            guard let index = draining.firstIndex(where: { $0.pid == pid }) else { return false }
            body(&draining[index])
            return true
        }
    }

    mutating func scheduleRestart(now: Moment) {
        state = .backingOff(until: now.monotonic + Double(backoff) / 1000)
        // Settings are at most 2^31 - 1 ms (ValueRange.duration), but double without trapping
        // whatever a manifest made in code holds.
        let doubled = backoff.multipliedReportingOverflow(by: 2)
        backoff = doubled.overflow ? settings.backoffMaxMilliseconds : min(doubled.partialValue, settings.backoffMaxMilliseconds)
    }

    /// The probe of a child that exited or became ready is of no use any more.
    func cancellingProbe(of pid: pid_t) -> [Action] {
        probing == pid ? [.cancelProbe(pid: pid)] : []
    }

    func statusLine(_ child: SupervisedChild) -> String {
        "Running the \(child.knownSlot.rawValue) slot (\(configuration.version(child.knownSlot))), pid \(child.pid)"
    }

    static func format(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        return tenths % 10 == 0 ? String(tenths / 10) : "\(tenths / 10).\(tenths % 10)"
    }
}
