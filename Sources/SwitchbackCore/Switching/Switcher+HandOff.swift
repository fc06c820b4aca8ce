#if canImport(Glibc)
import Glibc
#endif

/// A switch to the previous slot whose data must be converted back, while a supervisor of
/// this bundle serves a child of the current build: converting here would leave that child
/// serving data it cannot read. The switch is handed to the supervisor instead
/// (`SwitchRequest`), which stops its child, runs this same switch itself once no child
/// serves, answers, and starts the previous slot. The caller gets the `Result` it would have
/// got, so every command's output and exit code stay as they are.
extension Switcher {
    /// How long the caller waits for the supervisor's answer beyond the child's drain and grace.
    static let handOffWaitMilliseconds = 60_000
    /// How long the caller waits for the supervisor to take the request (it removes the file
    /// within milliseconds when it runs: the request wakes it through inotify). Longer than a
    /// planning run's deadline (10 s), the longest the supervisor goes without reading its events
    /// while it serves; a supervisor stopped (SIGSTOP), or hung, is not waited on longer.
    static let handOffTakeMilliseconds = 15_000

    /// What the caller makes of the supervisor record: the supervisor that serves a child on
    /// this state directory (unless the caller is that supervisor), none, or a stale record
    /// (`SupervisorIdentity`), which is ignored with its sentence. A child of the supervisor
    /// hands off like anyone else (the sync it starts for a directive file is one); its
    /// supervised launcher, which the supervisor waits for, never asks (`handsOff: false`).
    /// Whichever bundle it was started from: after a release was installed under it, its own
    /// executable is the old release's (or deleted) while it acts for this one. A supervisor
    /// that acts for another release refuses the request (its current build is not the
    /// request's), so nothing converts the data beside its child.
    enum Serving {
        case none
        case stale(String)
        case supervisor(LiveSupervisor)
    }

    func servingSupervisor() -> Serving {
        switch SupervisorIdentity.check(in: directory) {
        case .none: return .none
        case .stale(_, let sentence): return .stale(sentence)
        case .live(let live):
            guard live.record.childPID != nil, live.pid != getpid() else { return .none }
            return .supervisor(live)
        }
    }

    /// How a switch to the previous slot goes for the data as the current build published it:
    /// stop-first, with the clause that says why, when the previous build cannot read it.
    /// `LaunchPlanner.switchPath`'s rule; the hand-off, the supervisor's own verdicts and the
    /// requests it takes all ask here, so they cannot disagree.
    func pathBack() -> SwitchPath {
        LaunchPlanner.switchPath(target: .previous, targetVersion: manifest.previous.version,
                                 servingVersion: manifest.current.version,
                                 dataFloor: DataState.load(in: directory, for: manifest)?.readerFloor, pendingSteps: [])
    }

    /// What `handOff` came to: the supervisor's result, or the switch left to the caller (with
    /// the sentence of a stale record, for the caller to print).
    enum HandOff {
        case handled(Result)
        case notHanded(note: String?)
    }

    /// Hands the switch to the serving supervisor and waits for its answer; `.notHanded` when
    /// there is no such supervisor (a stale record says so in its note: the caller switches
    /// itself at once) or the data needs no conversion. A supervisor that goes away before it
    /// answers, whether or not it had taken the request, takes its children with it (its
    /// conversion's process included): the request goes to the supervisor serving now (a
    /// service manager may have restarted it), or, with none, the caller switches itself (a
    /// conversion left half done is finished). One that does not take the request within
    /// `handOffTakeMilliseconds` gets it withdrawn.
    func handOff(source: ChoiceSource, reason: String?, force: Bool, command: String) throws(SwitchbackError) -> HandOff {
        guard case .stopFirst = pathBack() else { return .notHanded(note: nil) }
        let supervisor: LiveSupervisor
        switch servingSupervisor() {
        case .none: return .notHanded(note: nil)
        case .stale(let sentence): return .notHanded(note: sentence)
        case .supervisor(let live): supervisor = live
        }
        let before = StateStore(directory: directory).load()
        let target = HealthStore(directory: directory).load().record.health(of: BuildIdentity(manifest, .previous), tries: manifest.trialTries)
        let request = SwitchRequest(id: "\(getpid())-\(currentUnixTime())", source: source, reason: reason, force: force,
                                    command: command, fromBuild: manifest.current.sha256)
        let requestPath = SwitchRequest.path(in: directory), answerPath = SwitchRequest.Answer.path(in: directory)
        do {
            try directory.prepare()
            try? FileSystem.remove(answerPath)
            try FileSystem.replace(requestPath, with: request.serialized(), durable: false)
        } catch {
            throw SwitchbackError(error.code, "Could not hand the switch to the supervisor (pid \(supervisor.pid)) in \(directory.path) (\(error.clause)); nothing was changed: make the directory writable, then retry.", path: error.path, errno: error.errno)
        }
        let settings = SupervisorSettings(manifest: manifest)
        let limit = Self.handOffWaitMilliseconds + settings.drainMilliseconds + settings.graceMilliseconds
        var waited = 0, taken = false
        while waited < limit {
            var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            nanosleep(&pause, nil)
            waited += 20
            if let bytes = try? FileSystem.read(answerPath, limit: 64 << 10),
               let answer = try? SwitchRequest.Answer.parse(bytes, path: answerPath), answer.id == request.id {
                try? FileSystem.remove(answerPath)
                return .handled(try result(of: answer, before: before, target: target, source: source))
            }
            if !supervisor.isRunning {
                // Gone: once the children it served with are too, the switch is asked again.
                try? FileSystem.remove(requestPath)
                Self.waitUntilGone(supervisor.record.childPID, milliseconds: 2000)
                return try handOff(source: source, reason: reason, force: force, command: command)
            }
            if !taken { taken = (try? FileSystem.read(requestPath, limit: 64 << 10)) == nil }
            if !taken && waited >= Self.handOffTakeMilliseconds { break }
        }
        if !taken { taken = (try? FileSystem.read(requestPath, limit: 64 << 10)) == nil }
        try? FileSystem.remove(requestPath)
        if taken {
            throw SwitchbackError(.ioFailure, "The supervisor (pid \(supervisor.pid)) took the switch but did not answer within \(limit / 1000) s; it may still happen: see rollbackctl status and rollbackctl history, then retry if the flag is not what you wanted.", path: requestPath)
        }
        throw SwitchbackError(.ioFailure, "The supervisor (pid \(supervisor.pid)) did not take the switch within \(Self.handOffTakeMilliseconds / 1000) s, so nothing was changed; check that it runs (rollbackctl status shows it), then retry.", path: requestPath)
    }

    /// A supervisor's child gets SIGKILL when the supervisor dies (PR_SET_PDEATHSIG); this
    /// waits, up to a bound, until it has exited.
    static func waitUntilGone(_ pid: Int32?, milliseconds: Int) {
        guard let pid else { return }
        var waited = 0
        while waited < milliseconds, SupervisorRecord.isRunning(pid) {
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            nanosleep(&pause, nil)
            waited += 10
        }
    }

    private func result(of answer: SwitchRequest.Answer, before: LoadedState, target: SlotHealth, source: ChoiceSource) throws(SwitchbackError) -> Result {
        switch answer.status {
        case "switched":
            let switched = SwitchOutcome(changed: answer.changed, before: before, damagedFileMovedTo: answer.damagedFileMovedTo,
                                         rearmed: source != .auto && target.isBad ? target : nil)
            return Result(downgrade: answer.downgrade, switched: switched, warning: answer.warning)
        case "refused":
            return Result(downgrade: answer.downgrade, refusal: answer.message ?? "The supervisor refused the switch; the flag is unchanged.")
        default:
            let code = answer.errorCode.flatMap(SwitchbackError.Code.init(rawValue:)) ?? .ioFailure
            throw SwitchbackError(code, answer.message ?? "The supervisor could not make the switch; the flag is unchanged.")
        }
    }
}
