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
        guard let bundleRoot = bundleRoot() else {
            fail("cannot find its own executable through /proc/self/exe; run it from a bundle built by scripts/bundle.")
        }
        let manifest: Manifest
        do { manifest = try Manifest.load(bundleRoot: bundleRoot) } catch { fail(error.message) }

        let earlierFailure = takeEarlierFailure()
        let (directory, loaded) = loadState(appID: manifest.appID)
        var decision: SlotDecision
        do { decision = try SlotDecision.decide(state: loaded, forcedSlot: environmentValue("SWITCHBACK_SLOT")) } catch {
            fail(error.message, code: 64)
        }
        if let earlierFailure, !decision.isForced {
            decision = SlotDecision(slot: earlierFailure.slot, reason: decision.reason)
                .fallingBack(failure: earlierFailure.message)
        }
        let trusted = loaded.problem?.code != .insecurePermissions
        let verifier = SlotVerifier(bundleRoot: bundleRoot, manifest: manifest,
                                    cache: trusted ? VerifiedCache(path: directory.verifiedCachePath) : nil)

        // Checks before mapping: a failure here can fall back in this process.
        let path: String
        do { path = try verifier.verify(decision.slot).path } catch {
            if decision.isForced { fail("\(error.message) SWITCHBACK_SLOT forces this slot, so the launcher does not fall back.") }
            if case .fallback(_, let first) = decision.reason { bothFailed(first, error.message) }
            decision = decision.fallingBack(failure: error.message)
            do { path = try verifier.verify(decision.slot).path } catch {
                if case .fallback(_, let first) = decision.reason { bothFailed(first, error.message) }
                fail(error.message)
            }
        }

        // Mapping: once dlopen ran, a failure re-executes to try the other slot.
        let slot: LoadedSlot
        do { slot = try LoadedSlot.load(decision.slot, path: path) } catch {
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
        exit(call(slot, manifest: manifest, directory: directory))
    }

    // MARK: - Steps

    static func bundleRoot() -> String? {
        guard let executable = FileSystem.resolved("/proc/self/exe") else { return nil }
        return FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: executable))
    }

    static func loadState(appID: String) -> (StateDirectory, LoadedState) {
        let directory: StateDirectory
        do { directory = try StateDirectory.resolve(appID: appID) } catch { fail(error.message, code: 64) }
        do { try directory.checkPermissions() } catch {
            return (directory, LoadedState(state: .initial, problem: error))
        }
        return (directory, StateStore(directory: directory).load())
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

    static func call(_ slot: LoadedSlot, manifest: Manifest, directory: StateDirectory) -> Int32 {
        let context = UnsafeMutablePointer<SwitchbackContext>.allocate(capacity: 1)
        context.initialize(to: SwitchbackContext(
            contract_version: UInt32(SWITCHBACK_CONTRACT_VERSION),
            size: UInt32(MemoryLayout<SwitchbackContext>.size),
            slot: slot.slot == .current ? Int32(SWITCHBACK_SLOT_CURRENT.rawValue) : Int32(SWITCHBACK_SLOT_PREVIOUS.rawValue),
            reserved: 0,
            slot_version: strdup(manifest[slot.slot].version),
            other_slot_version: strdup(manifest[slot.slot.other].version),
            state_directory: strdup(directory.path),
            mark_good: { _ in 0 },
            launcher_data: nil))
        return slot.entryPoint(CommandLine.argc, CommandLine.unsafeArgv, environ, context)
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
