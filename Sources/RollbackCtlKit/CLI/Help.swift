/// Renders help and usage lines from the command table, in argument-parser's
/// OVERVIEW / USAGE / ARGUMENTS / OPTIONS shape. Nothing here is written per command.
enum Help {
    /// The column where option and argument help starts.
    private static let column = 22

    /// `rollbackctl --help`.
    static func tool(_ commands: [CommandConfiguration]) -> String {
        var lines = ["OVERVIEW: \(ToolConfiguration.overview)", "", "USAGE: \(ToolConfiguration.usage)", "", "OPTIONS:"]
        for option in ToolConfiguration.globalOptions { lines += entry(option.synopsis, option.help) }
        lines += entry("--version", "Show the version.")
        lines += entry("-h, --help", "Show help information.")
        lines += ["", "SUBCOMMANDS:"]
        for command in commands { lines += entry(command.name, command.abstract) }
        lines += ["", "  See 'rollbackctl <subcommand> --help' for detailed help."]
        return lines.joined(separator: "\n")
    }

    /// `rollbackctl NAME --help`.
    static func command(_ command: CommandConfiguration) -> String {
        var lines = ["OVERVIEW: \(command.overview)", ""]
        let usage = command.usage
        lines.append("USAGE: \(usage[0])")
        lines += usage.dropFirst().map { "       \($0)" }
        let documented = command.arguments.filter { $0.help != nil }
        if !documented.isEmpty {
            lines += ["", "ARGUMENTS:"]
            for argument in documented { lines += entry(argument.name, argument.help!) }
        }
        lines += ["", "OPTIONS:"]
        for option in command.options { lines += entry(option.synopsis, option.help) }
        lines += entry("-h, --help", "Show help information.")
        for section in command.sections {
            lines += ["", "\(section.title):"]
            lines += section.body.split(separator: "\n", omittingEmptySubsequences: false).map { "  \($0)" }
        }
        return lines.joined(separator: "\n")
    }

    /// The usage line under a usage error: the command's first, else the tool's.
    static func usageLine(_ command: CommandConfiguration?) -> String {
        "Usage: " + (command?.usage[0] ?? ToolConfiguration.usage)
    }

    /// One entry: two spaces, the name padded to the column, then the help; the help's
    /// further lines start at the column too.
    private static func entry(_ name: String, _ help: String) -> [String] {
        let pad = String(repeating: " ", count: column)
        let head = "  " + name
        let first = head.count < column ? head + String(repeating: " ", count: column - head.count) : head + " "
        let helpLines = help.split(separator: "\n", omittingEmptySubsequences: false)
        return [first + helpLines[0]] + helpLines.dropFirst().map { pad + $0 }
    }
}
