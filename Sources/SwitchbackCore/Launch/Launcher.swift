#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract
import CSwitchbackSystem
import SwitchbackFiles
import SystemdNotify

/// The launcher's whole start-up: find the bundle, read the manifest and the state, decide,
/// check the slot file, map it, check its stamp, and call its entry point. Falls back to
/// the other slot when the chosen one cannot run, re-executing when the failed one was
/// already mapped, so two builds never share a process.
public enum Launcher {
    /// Carries a failure across the re-exec: "<slot>\t<message>". Removed before the app runs.
    static let failureVariable = "SWITCHBACK_LAUNCH_FAILED"
    /// The launcher's own failures exit with this code (EX_SOFTWARE); 64 for bad usage.
    public static let failureExitCode: Int32 = 70

    /// How the launcher executable hands inherited listening sockets to the app's own
    /// `bind` (CSwitchbackListen): first descriptor, count, the notify socket to tell, the
    /// drain signal (0: none).
    public typealias ListenerAdoption = @convention(c) (Int32, Int32, UnsafePointer<CChar>?, Int32) -> Int32

    /// Runs the app and exits with its exit code: decides the role, plans the start
    /// (`LaunchPlanner`, pure), then carries the plan out. Nothing after planning bends the
    /// decision: a fact learned while carrying it out (a refused switch, data that could not
    /// be converted) goes back to the planner, which says what follows.
    public static func run(adoptingListeners adopt: ListenerAdoption? = nil) -> Never {
        let role = LaunchRole.decide(environment: environmentValue)
        switch role {
        case .dataDowngrade, .planSteps: ParentDeath.adopt()
        default: break
        }
        if case .dataDowngrade(let mode) = role { runDowngrade(mode: mode) }
        if case .planSteps(let slot) = role { runPlanSteps(slot: slot) }
        // Until the app or the supervisor runs, each directory is checked once.
        StrictModes.rememberTrustedDirectories()
        guard let bundleRoot = bundleRoot() else {
            fail("cannot find its own executable through /proc/self/exe; run it from a bundle built by scripts/bundle.")
        }
        let manifest: Manifest
        do { manifest = try Manifest.load(bundleRoot: bundleRoot) } catch { fail(error.message) }

        let earlierFailure = takeEarlierFailure()
        let (directory, permissionProblem) = stateDirectory(appID: manifest.appID)
        if !role.isSupervisedChild, permissionProblem == nil {
            checkRemoteDirective(manifest: manifest, directory: directory, bundleRoot: bundleRoot)
            if SwitchJournal.exists(in: directory),
               let note = Switcher(bundleRoot: bundleRoot, manifest: manifest, directory: directory).recover() {
                printError("launcher: \(note)")
            }
        }
        // An untrusted state (the directory, the flag or the verdicts) is written nowhere and
        // decides only one thing: a rejection of the current build it records runs the
        // previous build (StartState); otherwise the current one runs, as the message says.
        let read = StartState.load(directory: directory, directoryProblem: permissionProblem, manifest: manifest)
        let trusted = read.isTrusted
        if role.isSupervisedChild {
            Supervisor.adoptParent()
        } else if role.supervises(manifest) {
            StrictModes.forgetTrustedDirectories()
            Supervisor.run(manifest: manifest, bundleRoot: bundleRoot, directory: directory, trusted: trusted)
        }

        // Plan (pure), then act. The slot checks are the planner's lazy input: a slot is
        // verified once, when the plan first needs it, and its verified file is what loads.
        let verifier = SlotVerifier(bundleRoot: bundleRoot, manifest: manifest,
                                    cache: trusted ? VerifiedCache(path: directory.verifiedCachePath) : nil)
        let checks = SlotChecks(verifier: verifier)
        let planner = LaunchPlanner(
            manifest: manifest, state: read.loaded, isTrusted: trusted, health: read.health,
            healthProblem: read.healthProblem, forcedSlot: environmentValue("SWITCHBACK_SLOT"),
            earlierFailure: earlierFailure, slotProblem: checks.problem,
            dataFloor: { dataFloor(manifest: manifest, directory: directory, trusted: trusted) })
        var plan: LaunchPlan
        do { plan = try planner.plan() } catch { fail(error.message, code: 64) }
        var record = read.health
        if let healthProblem = plan.healthProblem { printError("launcher: \(healthProblem.message) Every build is on trial again.") }
        if plan.countsTry {
            (plan, record) = carryOut(plan, planner: planner, record: record, manifest: manifest, directory: directory, bundleRoot: bundleRoot)
        }
        say(plan.notes, manifest)
        // The previous build never starts on data it cannot read: convert first, or refuse.
        if plan.refusal == nil, plan.convertsData,
           let problem = ensureDataReadableByPrevious(bundleRoot: bundleRoot, manifest: manifest, directory: directory) {
            let said = plan.notes.count
            plan = planner.afterRefusedConversion(plan, problem: problem)
            say(plan.notes.dropFirst(said), manifest)
        }
        if let refusal = plan.refusal { fail(refusal.sentence(manifest)) }
        let slotToRun = plan.decision.slot
        if let problem = checks.problem(slotToRun) { fail(problem) }
        guard let verified = checks.verified(slotToRun) else { fail("the \(slotToRun.rawValue) slot was not checked.") }

        // The try is used before anything of the build runs, its loading included.
        var session: StartSession?
        if plan.countsTry {
            let build = BuildIdentity(manifest, slotToRun)
            let known = record.health(of: build, tries: manifest.trialTries)
            let started = StartSession(store: HealthStore(directory: directory), build: build, tries: manifest.trialTries, known: known)
            if let problem = started.begin() {
                printError("launcher: This start of the \(slotToRun.rawValue) build (\(build.version), \(known.summary)) could not be recorded (\(problem.clause)); automatic rollback cannot count it until the state directory \(directory.path) is writable again. Running it anyway.")
            }
            session = started
        }

        // Mapping: once dlopen ran, a failure re-executes to try the other slot.
        // A file opened once with every symbol bound, against libraries that have not changed
        // since, is opened lazily: binding every symbol again is most of dlopen's cost.
        let slotRecord = manifest[slotToRun]
        let libraries = verified.libraryStamp
        let bindLazily = libraries != nil && verified.boundLibraries == libraries
        let slot: LoadedSlot
        do {
            slot = try LoadedSlot.load(slotToRun, verified: verified, dependencies: slotRecord.needed, bindLazily: bindLazily)
            if !bindLazily, let libraries {
                verifier.cache?.record(file: verified.path, fingerprint: verified.fingerprint, sha256: slotRecord.sha256, bound: libraries)
            }
        } catch {
            if plan.isForced { fail(LaunchRefusal.forcedSlotBroken(slot: slotToRun, failure: error.message).sentence(manifest)) }
            if let (_, first) = plan.fallback { fail(LaunchRefusal.noSlotRuns(first: first, then: error.message).sentence(manifest)) }
            reexecute(after: slotToRun, failure: error.message)
        }

        if let line = plan.closingNote(manifest, state: read.loaded) { printError("launcher: \(line)") }
        if let (failed, failure) = plan.fallback, trusted {
            recordFallback(from: failed, to: slotToRun, failure: failure, directory: directory)
        }
        StrictModes.forgetTrustedDirectories()
        if let adopt { adoptInheritedSockets(adopt, supervised: role.isSupervisedChild) }
        if role.isSupervisedChild { Supervisor.reportToParent(slot: slotToRun, build: manifest[slotToRun].sha256) }
        let code = call(slot, manifest: manifest, directory: directory, session: session)
        if code == 0 && manifest.goodOnExitZero { session?.markGood(note: "exited with code 0") }
        exit(code)
    }

    /// Carries out what a plan asks to write: a superseding release, a build out of tries
    /// marked bad, the flag following an automatic rollback (through `Switcher`, which
    /// converts the data first). Every write that fails is said on stderr. A switch that is
    /// refused goes back to the planner (`afterRefusedSwitch`): the failing build stays.
    /// Returns the plan to go on with and the verdicts as they are now.
    static func carryOut(_ planned: LaunchPlan, planner: LaunchPlanner, record: HealthRecord, manifest: Manifest,
                         directory: StateDirectory, bundleRoot: String) -> (LaunchPlan, HealthRecord) {
        var plan = planned
        let store = HealthStore(directory: directory)
        if plan.superseded != nil {
            do {
                if let event = try StateStore(directory: directory).recordSupersedingRelease(manifest: manifest) {
                    printError("launcher: \(HealthPolicy.capitalized(event.reason ?? "a new release superseded the rollback")); running it on trial.")
                }
            } catch {
                printError("launcher: A new release superseded the rollback, but that could not be recorded (\(error.message)); running the current slot anyway.")
            }
        }
        guard let choice = plan.health else { return (plan, record) }
        var changed = false
        if let bad = choice.markBad {
            changed = true
            do {
                try store.update(durable: true) { (record: inout HealthRecord) throws(SwitchbackError) in
                    let starts = record.health(of: bad, in: manifest).failedStarts
                    record.mark(BuildIdentity(manifest, bad), .bad(by: .auto), tries: manifest.trialTries,
                                note: "\(starts) \(starts == 1 ? "start" : "starts") without a good mark", at: currentUnixTime())
                }
            } catch {
                printError("launcher: The \(bad.rawValue) build (\(manifest[bad].version)) ran out of tries, but its bad verdict could not be recorded (\(error.message)).")
            }
        }
        if let (slot, reason) = choice.switchFlag {
            let switcher = Switcher(bundleRoot: bundleRoot, manifest: manifest, directory: directory)
            do {
                let result = try switcher.perform(rollback: slot == .previous, source: .auto, reason: reason, handsOff: false)
                if let refusal = result.refusal { plan = planner.afterRefusedSwitch(plan, refusal: refusal) }
            } catch {
                // Converted but not recorded: the data is the previous build's now, so it runs.
                if !(slot == .previous && SwitchJournal.exists(in: directory)) {
                    plan = planner.afterRefusedSwitch(plan, refusal: "the switch could not be recorded: \(error.message)")
                } else {
                    printError("launcher: \(error.message)")
                }
            }
        }
        return (plan, changed ? store.load().record : record)
    }

    /// Prints each note after `launcher: `.
    static func say(_ notes: some Sequence<LaunchNote>, _ manifest: Manifest) {
        for note in notes { printError("launcher: \(LaunchPlan.sentence(of: note, manifest))") }
    }

    /// The reader floor the current build published when the previous build cannot read the
    /// data, else nil: one small read, asked by the planner only when the previous slot would
    /// run. In an untrusted state directory the file is read without trusting it.
    public static func dataFloor(manifest: Manifest, directory: StateDirectory, trusted: Bool) -> String? {
        let published: DataState?
        if trusted {
            published = DataState.load(in: directory, for: manifest)
        } else {
            published = FileSystem.readUntrusted("data-state", in: directory.path)
                .flatMap { try? DataState.parse($0, path: DataState.path(in: directory)) }
                .flatMap { $0.mismatch(with: manifest) == nil ? $0 : nil }
        }
        guard let published, !published.isReadable(by: manifest.previous.version) else { return nil }
        return published.readerFloor ?? ""
    }

    // MARK: - Steps

    static func bundleRoot() -> String? {
        guard let executable = FileSystem.executablePath() else { return nil }
        return FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: executable))
    }

    /// The state directory, and why it is not trusted (another user could write it), if so.
    static func stateDirectory(appID: String) -> (StateDirectory, SwitchbackError?) {
        let directory: StateDirectory
        do { directory = try StateDirectory.resolve(appID: appID) } catch {
            // A relative path is a usage error (64); no state directory at all (HOME unset or
            // /) is a broken environment, refused like any other start (70).
            fail(error.message, code: error.code == .invalidArgument ? 64 : failureExitCode)
        }
        // What the group may write since the kubelet's pass is made this user's alone first.
        directory.tighten()
        do { try directory.checkPermissions() } catch { return (directory, error) }
        return (directory, nil)
    }

    /// The remote directive (docs/remote.md): by default, when the last check is older than
    /// the interval, start a detached background sync and go on at once (its result counts
    /// from the next start); with `remote.check_before_start`, run it and wait, bounded. A
    /// directive file is read (by the sync, waited for) only when it changed since the last one judged.
    static func checkRemoteDirective(manifest: Manifest, directory: StateDirectory, bundleRoot: String) {
        guard let trigger = RemoteCheckTrigger(manifest: manifest, directory: directory, bundleRoot: bundleRoot) else { return }
        // A local file: one stat, and the sync (waited for) only when it changed.
        if let path = trigger.settings.filePath {
            if let problem = trigger.syncIfFileChanged(path) { printError("launcher: \(problem)") }
        } else if trigger.settings.checksBeforeStart {
            if let problem = trigger.runBeforeStart() { printError("launcher: \(problem)") }
        } else if let problem = trigger.startInBackgroundIfDue() {
            printError("launcher: \(problem)")
        }
    }

    static func takeEarlierFailure() -> (slot: BuildSlot, message: String)? {
        guard let value = environmentValue(failureVariable) else { return nil }
        unsetenv(failureVariable)
        guard let tab = value.firstIndex(of: "\t"), let slot = BuildSlot(rawValue: String(value[..<tab])) else { return nil }
        return (slot, String(value[value.index(after: tab)...]))
    }

    static func reexecute(after failed: BuildSlot, failure: String) -> Never {
        setenv(failureVariable, "\(failed.rawValue)\t\(failure)", 1)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        let error = errno
        unsetenv(failureVariable)
        fail("\(failure) Re-executing to run the other slot failed: \(errorString(error)).")
    }

    static func recordFallback(from failed: BuildSlot, to slot: BuildSlot, failure: String, directory: StateDirectory) {
        let event = SwitchHistoryEvent(time: currentUnixTime(), kind: .fallback, from: failed, to: slot, source: .auto, reason: failure)
        try? FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            try HistoryLog(path: directory.historyPath).append(event)
        }
    }

    static func call(_ slot: LoadedSlot, manifest: Manifest, directory: StateDirectory, session: StartSession?) -> Int32 {
        let context = makeContext(slot: slot.slot, manifest: manifest, directory: directory, session: session)
        return slot.entryPoint(CommandLine.argc, CommandLine.unsafeArgv, environ, context)
    }

    /// The context handed to the app; lives until the process exits.
    static func makeContext(slot: BuildSlot, manifest: Manifest, directory: StateDirectory, session: StartSession?) -> UnsafePointer<SwitchbackContext> {
        let context = UnsafeMutablePointer<SwitchbackContext>.allocate(capacity: 1)
        context.initialize(to: SwitchbackContext(
            contract_version: UInt32(SWITCHBACK_CONTRACT_VERSION),
            size: UInt32(MemoryLayout<SwitchbackContext>.size),
            slot: slot == .current ? Int32(SWITCHBACK_SLOT_CURRENT.rawValue) : Int32(SWITCHBACK_SLOT_PREVIOUS.rawValue),
            reserved: 0,
            slot_version: strdup(manifest[slot].version),
            other_slot_version: strdup(manifest[slot.other].version),
            state_directory: strdup(directory.path),
            mark_good: { context in
                let written = context?.pointee.launcher_data.map {
                    Unmanaged<StartSession>.fromOpaque($0).takeUnretainedValue().markGood(note: "marked good by the app")
                } ?? 0
                // Then ready, for whoever waits on NOTIFY_SOCKET (the supervisor, or systemd's
                // Type=notify): sent here, not by the SDK, so that builds made before the SDK
                // knew sd_notify are ready too.
                Launcher.notifyReady()
                return written
            },
            launcher_data: session.map { Unmanaged.passRetained($0).toOpaque() }))
        return UnsafePointer(context)
    }


    /// Sockets inherited by the systemd protocol (LISTEN_FDS at 3..., LISTEN_PID this
    /// process): from the supervisor, or from systemd's socket activation. The app sees the
    /// protocol's variables as systemd sets them, and its own `bind` of such an address gets
    /// the inherited socket. Unsupervised, this costs one getenv.
    static func adoptInheritedSockets(_ adopt: ListenerAdoption, supervised: Bool) {
        guard let count = environmentValue("LISTEN_FDS").flatMap(Int32.init), count > 0, count <= 32,
              environmentValue("LISTEN_PID") == String(getpid()) else { return }
        // Only a supervisor wants to hear that the app took the socket, and drains children.
        _ = adopt(3, count, supervised ? getenv("NOTIFY_SOCKET") : nil, supervised ? switchback_drain_signal() : 0)
    }

    /// Sends READY=1 to NOTIFY_SOCKET, if set: the app marked itself good.
    static func notifyReady() {
        NotifySocket.send("READY=1")
    }

    // MARK: - Failing

    static func fail(_ message: String, code: Int32 = failureExitCode) -> Never {
        printError("launcher: \(message)")
        exit(code)
    }

    /// One line on stderr (the journal under systemd), passed through
    /// `OutsideText.keepingLines`: text quoted from a server, an app or a file runs no
    /// escape sequence in whatever shows the journal.
    static func printError(_ line: String) {
        var text = OutsideText.keepingLines(line)
        text += "\n"
        _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
    }
}
