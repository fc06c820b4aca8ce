/// How a rollbackctl command failed: bad usage (exit 64, with a usage line) or a failure
/// while doing the work (exit 1).
public enum CommandError: Error, Equatable {
    /// The command line was wrong; `subcommand` names whose help to point at.
    case usage(String, subcommand: String?)
    /// The work failed; one sentence.
    case failure(String)

    /// The process exit code.
    public var exitCode: Int32 {
        switch self {
        case .usage: return 64
        case .failure: return 1
        }
    }
}
