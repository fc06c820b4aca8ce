import RollbackCtlKit
import SwitchbackCore

/// The command line of rollbackctl-remote: rollbackctl's own table, parser and help (so usage
/// errors and `--help` read the same), with the commands of `sync`, `keygen`, `sign` and `rollout`.
public enum RemoteCtl {
    /// Runs the command line (without argv[0]) and returns the exit code: 0, 64 for bad
    /// usage, 1 for other failures (a refused or unreachable directive, a rolled-back
    /// rollout included), 3 while a rollout waits for an operator, 78 for a bad plan or
    /// analysis settings.
    /// A sync a launcher or a supervisor started dies with it (`ParentDeath`).
    public static func main(_ arguments: [String], console: Console = .standard) -> Int32 {
        ParentDeath.adopt()
        return RollbackCtl.main(arguments, console: console, remote: [SyncCommand.self, KeygenCommand.self, SignEntry.self, RolloutCommand.self, RolloutStatusCommand.self, AnalyzeCommand.self, DeliverHooksCommand.self])
    }
}
