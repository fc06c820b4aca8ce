/// A subcommand's arguments, split into options with values, flags and positionals. Knows
/// only what the subcommand's configuration declares, so a typo is a usage error, not a
/// silent no-op.
package struct ParsedArguments {
    package var options: [String: String] = [:]
    /// Every value of each repeated option, in order.
    package var lists: [String: [String]] = [:]
    package var flags: Set<String> = []
    package var positionals: [String] = []

    /// Parses `arguments` for `command` (plus the tool's global options), accepting
    /// `--name value` and `--name=value` for options with a value and bare flags; a repeated
    /// option may be given several times. `-h`/`--help` is always a flag. Throws a usage
    /// error naming the unknown option, the option without its value, the extra argument or
    /// the missing one.
    init(_ arguments: [String], for command: CommandConfiguration) throws(CommandError) {
        let declared = command.options + ToolConfiguration.globalOptions
        func usage(_ message: String) -> CommandError { .usage(message, subcommand: command.name) }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "-h" || argument == "--help" { flags.insert("--help"); continue }
            if argument == "--" {
                positionals.append(contentsOf: arguments[index...])
                break
            }
            guard argument.hasPrefix("--") else { positionals.append(argument); continue }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            guard let option = declared.first(where: { $0.name == name }), option.takesValue || inlineValue == nil else {
                throw usage("Unknown option '\(argument)'.")
            }
            switch option.kind {
            case .flag:
                flags.insert(name)
            case .value, .repeated:
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw usage("Missing value for '\(name)'.") }
                    value = arguments[index]
                    index += 1
                }
                if case .repeated = option.kind { lists[name, default: []].append(value) } else { options[name] = value }
            }
        }
        guard !wantsHelp else { return }
        if positionals.count > command.arguments.count {
            throw usage("Unexpected argument '\(positionals[command.arguments.count])'.")
        }
        if let missing = command.arguments.dropFirst(positionals.count).first(where: \.isRequired) {
            throw usage("Missing \(missing.missing).")
        }
    }

    package var wantsHelp: Bool { flags.contains("--help") }
    package var wantsJSON: Bool { flags.contains("--json") }
}
