import RollbackCtlKit

/// The command line of rollbackctl-remote: rollbackctl's own parser and help (so usage
/// errors and `--help` read the same), with `sync`, `keygen` and `sign` implemented here.
public enum RemoteCtl {
    /// Runs the command line (without argv[0]) and returns the exit code: 0, 64 for bad
    /// usage, 1 for other failures (a refused or unreachable directive included).
    public static func main(_ arguments: [String], console: Console = .standard) -> Int32 {
        RollbackCtl.main(arguments, console: console) { (name, parsed, bundle, stateDirectory, console) throws(CommandError) in
            switch name {
            case "keygen": try KeygenCommand(parsed).run(console)
            case "sign":
                if let file = parsed.options["--renew"] {
                    try RenewCommand(parsed, file: file).run(console)
                } else {
                    try SignCommand(parsed, bundle: bundle, stateDirectory: stateDirectory).run(console)
                }
            case "sync":
                let workspace = try Workspace.open(bundle: bundle, stateDirectory: stateDirectory)
                try SyncCommand(parsed, workspace: workspace).run(console)
            default: throw .usage("Unknown subcommand '\(name)'.", subcommand: nil)
            }
        }
    }
}
