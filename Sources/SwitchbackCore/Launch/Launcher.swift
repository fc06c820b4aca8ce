#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract
import CSwitchbackSystem
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

    /// Runs the app and exits with its exit code.
    public static func run(adoptingListeners adopt: ListenerAdoption? = nil) -> Never {
        if let mode = environmentValue(DataDowngrade.modeVariable) { runDowngrade(mode: mode) }
        // Until the app or the supervisor runs, each directory is checked once.
        StrictModes.rememberTrustedDirectories()
        guard let bundleRoot = bundleRoot() else {
            fail("cannot find its own executable through /proc/self/exe; run it from a bundle built by scripts/bundle.")
        }
        let manifest: Manifest
        do { manifest = try Manifest.load(bundleRoot: bundleRoot) } catch { fail(error.message) }

        let earlierFailure = takeEarlierFailure()
        let (directory, permissionProblem) = stateDirectory(appID: manifest.appID)
        if !Supervisor.isChild, permissionProblem == nil {
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
        let loaded = read.loaded
        if Supervisor.isChild {
            Supervisor.adoptParent()
        } else if Supervisor.isEnabled(manifest: manifest) {
            StrictModes.forgetTrustedDirectories()
            Supervisor.run(manifest: manifest, directory: directory, trusted: trusted)
        }

        // Plan (pure), then act: the state, the verdicts and the manifest decide the slot.
        let health = HealthStore(directory: directory)
        let forced = environmentValue("SWITCHBACK_SLOT")
        let planned = trusted && earlierFailure == nil && (forced ?? "").isEmpty
        var record = HealthRecord()
        if planned {
            record = read.health
            if let problem = read.healthProblem { printError("launcher: \(problem.message) Every build is on trial again.") }
        }
        var decision: SlotDecision
        do {
            let plan = try StartPlan.make(state: loaded, health: record, manifest: manifest, forcedSlot: forced, applyHealth: planned)
            decision = plan.decision
            if planned { record = carryOut(plan, record: record, store: health, manifest: manifest, directory: directory, bundleRoot: bundleRoot, decision: &decision) }
        } catch {
            fail(error.message, code: 64)
        }
        if let earlierFailure, !decision.isForced {
            decision = SlotDecision(slot: earlierFailure.slot, reason: decision.reason)
                .fallingBack(failure: earlierFailure.message)
        }
        let verifier = SlotVerifier(bundleRoot: bundleRoot, manifest: manifest,
                                    cache: trusted ? VerifiedCache(path: directory.verifiedCachePath) : nil)

        // Checks before mapping, and before any data is converted for the previous slot: a
        // failure here falls back in this process.
        var verified: SlotVerifier.Verified
        do { verified = try verifier.verify(decision.slot) } catch {
            if decision.isForced { fail("\(error.message) SWITCHBACK_SLOT forces this slot, so the launcher does not fall back.") }
            if case .fallback(_, let first) = decision.reason { bothFailed(first, error.message) }
            decision = decision.fallingBack(failure: error.message)
            do { verified = try verifier.verify(decision.slot) } catch {
                if case .fallback(_, let first) = decision.reason { bothFailed(first, error.message) }
                fail(error.message)
            }
        }
        // The previous build never starts on data it cannot read: convert first, or refuse.
        // In an untrusted directory nothing is converted (that writes): the start stops instead.
        if !trusted && decision.slot == .previous && !decision.isForced,
           let problem = untrustedDataProblem(manifest: manifest, directory: directory) {
            let found = loaded.problem?.clause ?? "The state is not trusted"
            fail("\(found)\(loaded.untrustedRejection.map { "; it records that \($0), but" } ?? ";") \(problem)")
        }
        if trusted && decision.slot == .previous,
           let problem = ensureDataReadableByPrevious(bundleRoot: bundleRoot, manifest: manifest, directory: directory) {
            if decision.isForced { fail("\(problem) SWITCHBACK_SLOT forces the previous slot, so the launcher stops here.") }
            if case .fallback(_, let failure) = decision.reason {
                fail("\(failure) The previous slot (\(manifest.previous.version)) cannot run instead: \(problem)")
            }
            printError("launcher: \(problem) Running the current slot (\(manifest.current.version)) instead.")
            decision = SlotDecision(slot: .current, reason: decision.reason)
            do { verified = try verifier.verify(.current) } catch { fail(error.message) }
        }

        // The try is used before anything of the build runs, its loading included.
        var session: StartSession?
        if planned {
            let build = BuildIdentity(manifest, decision.slot)
            let known = record.health(of: build, tries: manifest.trialTries)
            let started = StartSession(store: health, build: build, tries: manifest.trialTries, known: known)
            if let problem = started.begin() {
                printError("launcher: This start of the \(decision.slot.rawValue) build (\(build.version), \(known.summary)) could not be recorded (\(problem.clause)); automatic rollback cannot count it until the state directory \(directory.path) is writable again. Running it anyway.")
            }
            session = started
        }

        // Mapping: once dlopen ran, a failure re-executes to try the other slot.
        // A file opened once with every symbol bound, against libraries that have not changed
        // since, is opened lazily: binding every symbol again is most of dlopen's cost.
        let slotRecord = manifest[decision.slot]
        let libraries = verified.libraryStamp
        let bindLazily = libraries != nil && verified.boundLibraries == libraries
        let slot: LoadedSlot
        do {
            slot = try LoadedSlot.load(decision.slot, verified: verified, dependencies: slotRecord.needed, bindLazily: bindLazily)
            if !bindLazily, let libraries {
                verifier.cache?.record(file: verified.path, fingerprint: verified.fingerprint, sha256: slotRecord.sha256, bound: libraries)
            }
        } catch {
            if decision.isForced { fail("\(error.message) SWITCHBACK_SLOT forces this slot, so the launcher does not fall back.") }
            if case .fallback(_, let first) = decision.reason { bothFailed(first, error.message) }
            reexecute(after: decision.slot, failure: error.message)
        }

        if case .fallback(let failed, let failure) = decision.reason {
            printError("launcher: \(failure) Running the \(decision.slot.rawValue) slot (\(manifest[decision.slot].version)) instead.")
            if trusted { recordFallback(from: failed, to: decision.slot, failure: failure, directory: directory) }
        } else if let sentence = loaded.problemSentence {
            printError("launcher: \(sentence)")
        }
        StrictModes.forgetTrustedDirectories()
        if let adopt { adoptInheritedSockets(adopt) }
        if Supervisor.isChild { Supervisor.reportToParent(slot: decision.slot, build: manifest[decision.slot].sha256) }
        let code = call(slot, manifest: manifest, directory: directory, session: session)
        if code == 0 && manifest.goodOnExitZero { session?.markGood(note: "exited with code 0") }
        exit(code)
    }

    /// Carries out what a plan asks to write: a superseding release, a build out of tries
    /// marked bad, the flag following an automatic rollback (through `Switcher`, which
    /// converts the data first). Every write that fails is said on stderr. Returns the
    /// verdicts as they are now; `decision` becomes what actually runs.
    static func carryOut(_ plan: StartPlan, record: HealthRecord, store: HealthStore, manifest: Manifest, directory: StateDirectory,
                         bundleRoot: String, decision: inout SlotDecision) -> HealthRecord {
        if plan.superseded != nil {
            do {
                if let event = try StateStore(directory: directory).recordSupersedingRelease(manifest: manifest) {
                    printError("launcher: \(HealthPolicy.capitalized(event.reason ?? "a new release superseded the rollback")); running it on trial.")
                }
            } catch {
                printError("launcher: A new release superseded the rollback, but that could not be recorded (\(error.message)); running the current slot anyway.")
            }
        }
        let choice = plan.health
        var changed = false
        if let bad = choice.markBad {
            changed = true
            do {
                try store.update(durable: true) { (record: inout HealthRecord) throws(SwitchbackError) in
                    var health = record.health(of: bad, in: manifest)
                    health.verdict = .bad
                    health.markedBy = .auto
                    health.changedAt = currentUnixTime()
                    health.note = "\(health.failedStarts) \(health.failedStarts == 1 ? "start" : "starts") without a good mark"
                    record.set(health)
                }
            } catch {
                printError("launcher: The \(bad.rawValue) build (\(manifest[bad].version)) ran out of tries, but its bad verdict could not be recorded (\(error.message)).")
            }
        }
        if let (slot, reason) = choice.switchFlag {
            let switcher = Switcher(bundleRoot: bundleRoot, manifest: manifest, directory: directory)
            do {
                let result = try switcher.perform(rollback: slot == .previous, source: .auto, reason: reason)
                if let refusal = result.refusal {
                    printError("launcher: \(HealthPolicy.capitalized(reason)), but it stays: \(refusal)")
                    return changed ? store.load().record : record
                }
            } catch {
                // Converted but not recorded: the data is the previous build's now, so it runs.
                if !(slot == .previous && SwitchJournal.exists(in: directory)) {
                    printError("launcher: \(HealthPolicy.capitalized(reason)), but the switch could not be recorded: \(error.message) The \(slot.other.rawValue) slot runs.")
                    return changed ? store.load().record : record
                }
                printError("launcher: \(error.message)")
            }
        }
        if let message = choice.message { printError("launcher: \(message)") }
        decision = choice.decision
        return changed ? store.load().record : record
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
        do { try directory.checkPermissions() } catch { return (directory, error) }
        return (directory, nil)
    }

    /// Why the previous build cannot run on the data of an untrusted state directory, as a
    /// clause: the current build published a reader floor above the previous version (read
    /// without trusting it, like the state), and converting the data back would write there.
    /// Nil when nothing says so.
    static func untrustedDataProblem(manifest: Manifest, directory: StateDirectory) -> String? {
        let path = DataState.path(in: directory)
        guard let bytes = FileSystem.readUntrusted("data-state", in: directory.path),
              let published = try? DataState.parse(bytes, path: path), published.mismatch(with: manifest) == nil,
              !published.isReadable(by: manifest.previous.version) else { return nil }
        return "the previous slot (\(manifest.previous.version)) cannot run on the data: its reader floor is \(published.readerFloor ?? ""), and converting it back would write to a state directory the launcher does not trust; fix its permissions as said, then start again."
    }

    /// The remote directive (docs/remote.md): by default, when the last check is older than
    /// the interval, start a detached background sync and go on at once (its result counts
    /// from the next start); with `remote.check_before_start`, run it and wait, bounded.
    static func checkRemoteDirective(manifest: Manifest, directory: StateDirectory, bundleRoot: String) {
        guard let trigger = RemoteCheckTrigger(manifest: manifest, directory: directory, bundleRoot: bundleRoot) else { return }
        if trigger.settings.checksBeforeStart {
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
    static func adoptInheritedSockets(_ adopt: ListenerAdoption) {
        guard let count = environmentValue("LISTEN_FDS").flatMap(Int32.init), count > 0, count <= 32,
              environmentValue("LISTEN_PID") == String(getpid()) else { return }
        // Only a supervisor wants to hear that the app took the socket, and drains children.
        let supervised = Supervisor.isChild
        _ = adopt(3, count, supervised ? getenv("NOTIFY_SOCKET") : nil, supervised ? switchback_drain_signal() : 0)
    }

    /// Sends READY=1 to NOTIFY_SOCKET, if set: the app marked itself good.
    static func notifyReady() {
        NotifySocket.send("READY=1")
    }

    // MARK: - Failing

    static func bothFailed(_ first: String, _ second: String) -> Never {
        fail("neither slot can run. First: \(first) Then: \(second) Rebuild the bundle with scripts/bundle, or restore the files named above.")
    }

    static func fail(_ message: String, code: Int32 = failureExitCode) -> Never {
        printError("launcher: \(message)")
        exit(code)
    }

    static func printError(_ line: String) {
        var text = line
        text += "\n"
        _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
    }
}
