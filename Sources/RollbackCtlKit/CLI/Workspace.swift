#if canImport(Glibc)
import Glibc
#endif
import SwitchbackCore

/// The bundle and state directory a command works on.
package struct Workspace {
    package let bundleRoot: String
    package let manifest: Manifest
    package let directory: StateDirectory

    /// Finds the bundle (`--bundle`, else the directory above this executable's bin/),
    /// reads its manifest and resolves the state directory.
    package static func open(bundle: String?, stateDirectory: String?) throws(CommandError) -> Workspace {
        let root: String
        if let bundle {
            guard let resolved = FileSystem.resolved(bundle) else { throw .failure("The bundle directory \(bundle) does not exist.") }
            root = resolved
        } else {
            guard let executable = FileSystem.resolved("/proc/self/exe") else {
                throw .failure("Cannot find this executable through /proc/self/exe; pass --bundle DIR.")
            }
            root = FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: executable))
        }
        let manifest: Manifest
        do { manifest = try Manifest.load(bundleRoot: root) } catch { throw .failure(error.message) }
        // A relative --state-dir is made absolute against the working directory; a relative
        // SWITCHBACK_STATE_DIR (or HOME) is a usage error, exit 64, as in the launcher.
        do {
            let directory = try StateDirectory.resolve(explicit: stateDirectory, appID: manifest.appID)
            return Workspace(bundleRoot: root, manifest: manifest, directory: directory)
        } catch {
            throw error.code == .invalidArgument ? .usage(error.message, subcommand: nil) : .failure(error.message)
        }
    }

    package var store: StateStore { StateStore(directory: directory) }
    var history: HistoryLog { HistoryLog(path: directory.historyPath) }
    var health: HealthStore { HealthStore(directory: directory) }

    /// The verdict on the build in `slot` now.
    func health(of slot: BuildSlot, in record: HealthRecord) -> SlotHealth {
        record.health(of: slot, in: manifest)
    }

    /// Refuses a state directory another user can write.
    package func checkTrusted() throws(CommandError) {
        do { try directory.checkPermissions() } catch { throw .failure(error.message) }
    }

    /// A verifier that shares the launcher's cache of verified fingerprints.
    func verifier(useCache: Bool = true) -> SlotVerifier {
        SlotVerifier(bundleRoot: bundleRoot, manifest: manifest,
                     cache: useCache ? VerifiedCache(path: directory.verifiedCachePath) : nil)
    }
}
