import RollbackCtlKit

/// The command line of rollbackctl-remote: rollbackctl's own table, parser and help (so usage
/// errors and `--help` read the same), with the commands of `sync`, `keygen` and `sign`.
public enum RemoteCtl {
    /// Runs the command line (without argv[0]) and returns the exit code: 0, 64 for bad
    /// usage, 1 for other failures (a refused or unreachable directive included).
    public static func main(_ arguments: [String], console: Console = .standard) -> Int32 {
        RollbackCtl.main(arguments, console: console, remote: [SyncCommand.self, KeygenCommand.self, SignEntry.self, AnalyzeCommand.self])
    }
}
