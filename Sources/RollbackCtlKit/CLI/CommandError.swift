/// How a rollbackctl command failed: a `code` callers branch on, one sentence for the user,
/// and for bad usage the subcommand whose help to point at. Usage errors exit 64 (with a
/// usage line), a bad configuration file 78, a command waiting for an operator 3, every
/// other code 1.
public struct CommandError: Error, Equatable, Sendable {
    /// What went wrong, for callers to branch on (never the message's text).
    public enum Code: String, Sendable {
        /// The command line was wrong (exit 64).
        case usage
        /// The work failed for a reason no caller tells apart (exit 1).
        case failed
        /// A switch was refused before anything changed: the data cannot be converted back,
        /// the previous slot cannot run, or the bundle is a first release (exit 1).
        case switchRefused = "switch_refused"
        /// The state directory could not be written (locked, full, read-only) (exit 1).
        case stateNotWritable = "state_not_writable"
        /// The configuration is unusable: a bundle's `analysis.*` settings that do not read,
        /// or a rollout plan (exit 78, EX_CONFIG, which the supervisor tells apart from a crash).
        case configInvalid = "config_invalid"
        /// The command stopped to wait for an operator (a rollout step that needs approval, an
        /// inconclusive analysis); the message says what to run. Not an error: it goes to
        /// stdout (exit 3).
        case waiting
        /// A rollout stopped because another process took the served directive over during a
        /// pause: an `--abort` from another shell, or a directive published by hand; it
        /// published nothing after it (exit 4).
        case superseded
        /// A rollout's step failed its analysis and the rollback was published, or the rollout
        /// had been rolled back before (exit 2): an outcome a pipeline tells apart from a
        /// rollout that cannot go on (exit 1).
        case rolledBack = "rolled_back"
    }

    public var code: Code
    /// One sentence the user can act on.
    public var message: String
    /// For `.usage`: the subcommand whose usage line and help to show (nil: the tool's).
    public var subcommand: String?

    public init(_ code: Code, _ message: String, subcommand: String? = nil) {
        self.code = code
        self.message = message
        self.subcommand = subcommand
    }

    /// The command line was wrong; `subcommand` names whose help to point at.
    public static func usage(_ message: String, subcommand: String?) -> CommandError {
        CommandError(.usage, message, subcommand: subcommand)
    }

    /// The work failed; one sentence.
    public static func failure(_ message: String, code: Code = .failed) -> CommandError {
        CommandError(code, message)
    }

    /// The process exit code: 64 for bad usage, 78 for an unusable configuration (a bundle's
    /// `analysis.*` settings, a rollout plan), 3 for a command waiting for an operator, 4 for a
    /// rollout another process took over, 2 for a rollout rolled back, 1 for everything else.
    public var exitCode: Int32 {
        switch code {
        case .usage: return 64
        case .configInvalid: return 78
        case .waiting: return 3
        case .superseded: return 4
        case .rolledBack: return 2
        case .failed, .switchRefused, .stateNotWritable: return 1
        }
    }
}
