/// A subcommand: it declares its options and help (`configuration`), parses its own values
/// in `init` and does its work in `run`, all in one type, as argument-parser's commands do.
package protocol Command {
    /// Its name, help and options: the one table the parser and the help read.
    static var configuration: CommandConfiguration { get }
    /// Checks the parsed arguments' values (a bad one is a usage error naming the option).
    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError)
    func run(_ console: Console) throws(CommandError)
}

/// A command that reads the install and prints a report, as text or with `--json` as JSON:
/// its values are the workspace and that choice.
protocol ReportCommand: Command {
    init(workspace: Workspace, json: Bool)
}

extension ReportCommand {
    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        self.init(workspace: try context.workspace(), json: arguments.wantsJSON)
    }
}

/// What every subcommand gets besides its own options: the global `--bundle` and
/// `--state-dir`, given before or after the subcommand's name.
package struct CommandContext: Sendable {
    package var bundle: String?
    package var stateDirectory: String?

    /// The bundle and state directory to work on (reads the manifest).
    package func workspace() throws(CommandError) -> Workspace {
        try Workspace.open(bundle: bundle, stateDirectory: stateDirectory)
    }
}
