#if canImport(Glibc)
import Glibc
#endif
import SwitchbackContract

/// The launcher's whole start-up: find the bundle, read the manifest and the state, decide,
/// check the slot file, map it, check its stamp, and call its entry point. Falls back to
/// the other slot when the chosen one cannot run, re-executing when the failed one was
/// already mapped, so two builds never share a process.
public enum Launcher {
    /// Carries a failure across the re-exec: "<slot>\t<message>". Removed before the app runs.
    static let failureVariable = "SWITCHBACK_LAUNCH_FAILED"
    /// The launcher's own failures exit with this code (EX_SOFTWARE); 64 for bad usage.
    public static let failureExitCode: Int32 = 70

    /// Runs the app and exits with its exit code.
    public static func run() -> Never {
        if let mode = environmentValue(DataDowngrade.modeVariable) { runDowngrade(mode: mode) }
        guard let bundleRoot = bundleRoot() else {
            fail("cannot find its own executable through /proc/self/exe; run it from a bundle built by scripts/bundle.")
        }
        let manifest: Manifest
        do { manifest = try Manifest.load(bundleRoot: bundleRoot) } catch { fail(error.message) }

        let earlierFailure = takeEarlierFailure()
        let (directory, permissionProblem) = stateDirectory(appID: manifest.appID)
        if !Supervisor.isChild, permissionProblem == nil {
            checkRemoteDirective(manifest: manifest, directory: directory, bundleRoot: bundleRoot)
        }
        let loaded = permissionProblem.map { LoadedState(state: .initial, problem: $0) } ?? StateStore(directory: directory).load()
        if Supervisor.isChild {
            Supervisor.adoptParent()
        } else if Supervisor.isEnabled(manifest: manifest) {
            Supervisor.run(manifest: manifest, directory: directory, trusted: loaded.problem?.code != .insecurePermissions)
        }
        var decision: SlotDecision
        do { decision = try SlotDecision.decide(state: loaded, forcedSlot: environmentValue("SWITCHBACK_SLOT")) } catch {
            fail(error.message, code: 64)
        }
        if let earlierFailure, !decision.isForced {
            decision = SlotDecision(slot: earlierFailure.slot, reason: decision.reason)
                .fallingBack(failure: earlierFailure.message)
        }
        let trusted = loaded.problem?.code != .insecurePermissions
        let health = HealthStore(directory: directory)
        var healthRecord = HealthRecord()
        if trusted && !decision.isForced {
            healthRecord = applyHealth(to: &decision, store: health, manifest: manifest, directory: directory, bundleRoot: bundleRoot)
        }
        if trusted && decision.slot == .previous,
           let problem = ensureDataReadableByPrevious(bundleRoot: bundleRoot, manifest: manifest, directory: directory) {
            if decision.isForced { fail("\(problem) SWITCHBACK_SLOT forces the previous slot, so the launcher stops here.") }
            printError("launcher: \(problem) Running the current slot (\(manifest.current.version)) instead.")
            decision = SlotDecision(slot: .current, reason: decision.reason)
        }
        let verifier = SlotVerifier(bundleRoot: bundleRoot, manifest: manifest,
                                    cache: trusted ? VerifiedCache(path: directory.verifiedCachePath) : nil)

        // Checks before mapping: a failure here can fall back in this process.
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

        // The try is used before anything of the build runs, its loading included.
        var session: StartSession?
        if trusted && !decision.isForced {
            let build = manifest[decision.slot].sha256
            session = StartSession(store: health, slot: decision.slot, build: build, tries: manifest.trialTries,
                                   known: healthRecord.health(of: decision.slot, build: build, tries: manifest.trialTries))
            session?.begin()
        }

        // Mapping: once dlopen ran, a failure re-executes to try the other slot.
        // A file opened once with every symbol bound, against libraries that have not changed
        // since, is opened lazily: binding every symbol again is most of dlopen's cost.
        let record = manifest[decision.slot]
        let libraries = LibraryStamp.of(record.needed)
        let bindLazily = libraries != nil && verified.boundLibraries == libraries
        let slot: LoadedSlot
        do {
            slot = try LoadedSlot.load(decision.slot, verified: verified, dependencies: record.needed, bindLazily: bindLazily)
            if !bindLazily, let libraries {
                verifier.cache?.record(file: verified.path, fingerprint: verified.fingerprint, sha256: record.sha256, bound: libraries)
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
        if Supervisor.isChild { Supervisor.reportToParent(slot: decision.slot, build: manifest[decision.slot].sha256) }
        let code = call(slot, manifest: manifest, directory: directory, session: session)
        if code == 0 && manifest.goodOnExitZero { session?.markGood(note: "exited with code 0") }
        exit(code)
    }

    // MARK: - Steps

    static func bundleRoot() -> String? {
        guard let executable = FileSystem.executablePath() else { return nil }
        return FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: executable))
    }

    /// The state directory, and why it is not trusted (another user could write it), if so.
    static func stateDirectory(appID: String) -> (StateDirectory, SwitchbackError?) {
        let directory: StateDirectory
        do { directory = try StateDirectory.resolve(appID: appID) } catch { fail(error.message, code: 64) }
        do { try directory.checkPermissions() } catch { return (directory, error) }
        return (directory, nil)
    }

    /// The remote directive (docs/remote.md): by default, when the last check is older than
    /// the interval, start a detached background sync and go on at once (its result counts
    /// from the next start); with `remote.check_before_start`, run it and wait, bounded.
    static func checkRemoteDirective(manifest: Manifest, directory: StateDirectory, bundleRoot: String) {
        guard let trigger = RemoteCheckTrigger(manifest: manifest, directory: directory, bundleRoot: bundleRoot) else { return }
        if trigger.settings.checksBeforeStart {
            trigger.runBeforeStart()
        } else if let problem = trigger.startInBackgroundIfDue() {
            printError("launcher: \(problem)")
        }
    }

    /// Automatic rollback: a build out of tries is marked bad, a bad build gives way to the
    /// other slot (and the flag follows, source `auto`). Returns the verdicts it read.
    /// A switch to the previous slot converts the data back first (`DataDowngrade`); when it
    /// cannot, the current build keeps running, bad or not, because the previous one would
    /// misread the data.
    static func applyHealth(to decision: inout SlotDecision, store: HealthStore, manifest: Manifest, directory: StateDirectory,
                            bundleRoot: String) -> HealthRecord {
        let (record, problem) = store.load()
        if let problem { printError("launcher: \(problem.message) Every build is on trial again.") }
        let tries = manifest.trialTries
        let choice = HealthPolicy.choose(decision,
                                         current: record.health(of: .current, build: manifest.current.sha256, tries: tries),
                                         previous: record.health(of: .previous, build: manifest.previous.sha256, tries: tries),
                                         versions: { manifest[$0].version })
        if let bad = choice.markBad {
            try? store.update(durable: true) { (record: inout HealthRecord) throws(SwitchbackError) in
                var health = record.health(of: bad, build: manifest[bad].sha256, tries: tries)
                health.verdict = .bad
                health.changedAt = currentUnixTime()
                health.note = "\(health.failedStarts) \(health.failedStarts == 1 ? "start" : "starts") without a good mark"
                record[bad] = health
            }
        }
        if let (slot, reason) = choice.switchFlag {
            if slot == .previous {
                let downgrade = DataDowngrade(bundleRoot: bundleRoot, manifest: manifest, directory: directory)
                let outcome = downgrade.run(force: false, source: .auto, reason: reason)
                guard outcome.allowsSwitch else {
                    printError("launcher: \(HealthPolicy.capitalized(reason)), but it stays: \(downgrade.refusal(outcome, command: "rollbackctl rollback"))")
                    return choice.markBad == nil ? record : store.load().record
                }
            }
            _ = try? StateStore(directory: directory).setRollback(slot == .previous, source: .auto, reason: reason)
        }
        if let message = choice.message { printError("launcher: \(message)") }
        decision = choice.decision
        return choice.markBad == nil ? record : store.load().record
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
        let event = HistoryEvent(time: currentUnixTime(), kind: .fallback, from: failed, to: slot, source: .auto, reason: failure)
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
                guard let data = context?.pointee.launcher_data else { return 0 }
                return Unmanaged<StartSession>.fromOpaque(data).takeUnretainedValue().markGood(note: "marked good by the app")
            },
            launcher_data: session.map { Unmanaged.passRetained($0).toOpaque() }))
        return UnsafePointer(context)
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
