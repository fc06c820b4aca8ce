/// How a rollbackctl command failed: a `code` callers branch on, one sentence for the user,
/// and for bad usage the subcommand whose help to point at. Usage errors exit 64 (with a
/// usage line), every other code exits 1.
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
        /// The bundle's configuration is unusable, e.g. `analysis.*` settings that do not
        /// read (exit 78, EX_CONFIG, which the supervisor tells apart from a crash).
        case configInvalid = "config_invalid"
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

    /// The process exit code: 64 for bad usage, 78 for an unusable configuration, 1 for
    /// everything else.
    public var exitCode: Int32 {
        switch code {
        case .usage: return 64
        case .configInvalid: return 78
        default: return 1
        }
    }
}
