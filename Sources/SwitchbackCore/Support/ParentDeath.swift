#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// A process started to work on the data (a conversion back, a planning run, a sync) dies
/// with the process that started it: a supervisor or a command killed (`kill -9`, the OOM
/// killer) leaves no orphan that holds the data's lock or converts it unrecorded while the
/// caller that takes the switch over does the same work. The parent names itself in the
/// child's environment (`variable`); the child, first thing, asks the kernel for SIGKILL
/// when its parent dies and then checks that the parent is still the one named: one that
/// died before the `prctl` would otherwise go unnoticed.
public enum ParentDeath {
    /// Set in the child's environment: the pid of the process that started it.
    public static let variable = "SWITCHBACK_PARENT_PID"

    /// `NAME=value` for a child's environment.
    public static var environmentEntry: String { "\(variable)=\(getpid())" }

    /// In the child: SIGKILL on the parent's death (`PR_SET_PDEATHSIG`), then `_exit(70)` if
    /// the parent named in `variable` is already gone (this process was adopted: `getppid()`
    /// differs). Removes the variable. Nothing happens when it is not set.
    public static func adopt() {
        guard let value = environmentValue(variable) else { return }
        unsetenv(variable)
        guard let parent = Int32(value) else { return }
        _ = switchback_set_parent_death_signal(SIGKILL)
        if getppid() != parent { _exit(70) }
    }
}
