#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract

extension Launcher {
    /// The launcher started by `PendingSteps` (with `SWITCHBACK_PLAN_STEPS=current|previous`):
    /// loads that slot, and only it, calls its planning entry point, and prints the steps it
    /// would run at its start (`step NAME VERSION FLOOR` lines, then `done`, exit 0); `unknown`
    /// (exit 0) when the slot has no planning entry point; `message=...` (exit 70) when it
    /// cannot answer. Touches neither the flag, nor the tries, nor the data.
    ///
    /// The answer goes to the descriptor stdout was; stdout itself then points at stderr, so
    /// that whatever the app's own code prints while it registers its steps is never taken
    /// for a step.
    static func runPlanSteps(slot name: String) -> Never {
        unsetenv(PendingSteps.modeVariable)
        let answerFD = fcntl(1, F_DUPFD_CLOEXEC, 3)
        guard answerFD >= 0, dup2(2, 1) == 1 else { planFailed("cannot set its output aside: \(errorString(errno)).", to: 1) }
        guard let slotToAsk = BuildSlot(rawValue: name) else {
            planFailed("\(PendingSteps.modeVariable) must be 'current' or 'previous', not '\(name)'.", to: answerFD)
        }
        guard let bundleRoot = bundleRoot() else { planFailed("cannot find its own executable through /proc/self/exe.", to: answerFD) }
        let manifest: Manifest
        do { manifest = try Manifest.load(bundleRoot: bundleRoot) } catch { planFailed(error.message, to: answerFD) }
        let directory: StateDirectory
        do {
            directory = try StateDirectory.resolve(appID: manifest.appID)
            try directory.checkPermissions()
        } catch { planFailed(error.message, to: answerFD) }

        let verifier = SlotVerifier(bundleRoot: bundleRoot, manifest: manifest,
                                    cache: VerifiedCache(path: directory.verifiedCachePath))
        let slot: LoadedSlot
        do {
            let verified = try verifier.verify(slotToAsk)
            slot = try LoadedSlot.load(slotToAsk, verified: verified, dependencies: manifest[slotToAsk].needed)
        } catch { planFailed(error.message, to: answerFD) }

        guard let plan = slot.library.symbol(named: SWITCHBACK_PENDING_STEPS_SYMBOL, as: SwitchbackPendingStepsFunction.self) else {
            // A build from before the planning entry point cannot say what its start does.
            answer(line: "unknown", to: answerFD)
            exit(0)
        }
        let context = makeContext(slot: slotToAsk, manifest: manifest, directory: directory, session: nil)
        guard plan(answerFD, context) == SWITCHBACK_PENDING_STEPS_DONE else {
            // The app's entry point wrote its message= line already.
            exit(failureExitCode)
        }
        answer(line: "done", to: answerFD)
        exit(0)
    }

    static func answer(line: String, to fd: Int32) {
        var text = line + "\n"
        _ = text.withUTF8 { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    static func planFailed(_ message: String, to fd: Int32) -> Never {
        answer(line: "message=\(message)", to: fd)
        exit(failureExitCode)
    }
}
