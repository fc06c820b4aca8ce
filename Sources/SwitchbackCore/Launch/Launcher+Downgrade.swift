#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract

extension Launcher {
    /// The launcher started by `DataDowngrade` (with `SWITCHBACK_DOWNGRADE=run|force`): loads
    /// the current slot, and only it, calls its downgrade entry point with the previous
    /// slot's version, and exits with its result. Touches neither the flag nor the tries.
    /// Its own failures are reported on stdout as `message=` and exit 70.
    static func runDowngrade(mode: String) -> Never {
        unsetenv(DataDowngrade.modeVariable)
        guard mode == "run" || mode == "force" else {
            downgradeFailed("\(DataDowngrade.modeVariable) must be 'run' or 'force', not '\(mode)'.")
        }
        guard let bundleRoot = bundleRoot() else { downgradeFailed("cannot find its own executable through /proc/self/exe.") }
        let manifest: Manifest
        do { manifest = try Manifest.load(bundleRoot: bundleRoot) } catch { downgradeFailed(error.message) }
        let directory: StateDirectory
        do {
            directory = try StateDirectory.resolve(appID: manifest.appID)
            try directory.checkPermissions()
        } catch { downgradeFailed(error.message) }

        let verifier = SlotVerifier(bundleRoot: bundleRoot, manifest: manifest,
                                    cache: VerifiedCache(path: directory.verifiedCachePath))
        let slot: LoadedSlot
        do {
            let verified = try verifier.verify(.current)
            slot = try LoadedSlot.load(.current, verified: verified, dependencies: manifest.current.needed)
        } catch { downgradeFailed(error.message) }

        guard let downgrade = slot.library.symbol(named: SWITCHBACK_DOWNGRADE_SYMBOL, as: SwitchbackDowngradeFunction.self) else {
            // A build without the entry point declares its data readable by the previous one.
            reportLine("message=The current build (\(manifest.current.version)) exports no \(SWITCHBACK_DOWNGRADE_SYMBOL); its data is taken as readable by \(manifest.previous.version).")
            exit(SWITCHBACK_DOWNGRADE_DONE)
        }
        let context = makeContext(slot: .current, manifest: manifest, directory: directory, session: nil)
        let flags: UInt32 = mode == "force" ? SWITCHBACK_DOWNGRADE_FORCE : 0
        let result = manifest.previous.version.withCString { downgrade($0, flags, 1, context) }
        exit(result)
    }

    /// Before the previous slot runs: when the current build published a reader floor
    /// above the previous version (its data changed since the last switch, say by a start
    /// of the current build in between), convert the data back first. Returns nil when the
    /// previous slot may run, else why not. Costs one small read, and only on this path.
    static func ensureDataReadableByPrevious(bundleRoot: String, manifest: Manifest, directory: StateDirectory) -> String? {
        // A state another build published says nothing about this one's data.
        guard let published = DataState.load(in: directory, for: manifest), !published.isReadable(by: manifest.previous.version) else { return nil }
        let downgrade = DataDowngrade(bundleRoot: bundleRoot, manifest: manifest, directory: directory)
        let outcome = downgrade.run(force: false, source: .auto,
                                    reason: "the data's reader floor \(published.readerFloor ?? "") is above the previous build (\(manifest.previous.version))")
        return outcome.allowsSwitch ? nil : downgrade.refusal(outcome, command: "rollbackctl rollback")
    }

    static func reportLine(_ line: String) {
        var text = line
        text += "\n"
        _ = text.withUTF8 { write(1, $0.baseAddress, $0.count) }
    }

    static func downgradeFailed(_ message: String) -> Never {
        reportLine("message=\(message)")
        exit(DataDowngrade.unavailableExitCode)
    }
}
