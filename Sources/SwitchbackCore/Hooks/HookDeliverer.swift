#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// Starts `bin/rollbackctl-remote deliver-hooks` fully detached
/// (`switchback_spawn_detached_after`: adopted by init, never a zombie of the caller, no
/// descriptor of the caller held), from the descriptor that was checked (`ProgramFile`, as
/// the remote check's program is: it runs as whoever switched, root included), at the
/// caller's priority: a background check is niced, the events people wait for are not. The caller
/// never waits for it; one that finds another deliverer running exits at once, and that one
/// looks at the queue again before it leaves.
public enum HookDeliverer {
    /// Returns a sentence when the program was refused or could not be started.
    public static func start(bundleRoot: String, directory: StateDirectory) -> String? {
        let path = bundleRoot + "/bin/rollbackctl-remote"
        let program: ProgramFile
        do { program = try ProgramFile.open(path, what: "rollbackctl-remote program") } catch { return error.message }
        let result = withExtendedLifetime(program) {
            withCStrings([path, "--state-dir", directory.path, "--bundle", bundleRoot, "deliver-hooks"]) { argv in
                switchback_spawn_detached_after(0, 0, program.descriptor, argv, environ)
            }
        }
        return result == 0 ? nil : "cannot start \(path): \(errorString(result))."
    }
}
