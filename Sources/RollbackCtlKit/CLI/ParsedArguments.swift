/// A subcommand's arguments, split into options with values, flags and positionals. Knows
/// only what the subcommand declares, so a typo is a usage error, not a silent no-op.
struct ParsedArguments {
    var options: [String: String] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    /// Parses `arguments` for `subcommand`, accepting `--name value` and `--name=value` for
    /// `valued` options and bare `flags`. `-h`/`--help` is always a flag.
    init(_ arguments: [String], subcommand: String, valued: Set<String> = [], flags allowed: Set<String> = [], maxPositionals: Int = 0) throws(CommandError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "-h" || argument == "--help" { flags.insert("--help"); continue }
            if argument == "--" {
                positionals.append(contentsOf: arguments[index...])
                break
            }
            if argument.hasPrefix("--") {
                var name = argument
                var inlineValue: String?
                if let equals = argument.firstIndex(of: "=") {
                    name = String(argument[..<equals])
                    inlineValue = String(argument[argument.index(after: equals)...])
                }
                if valued.contains(name) {
                    if let inlineValue { options[name] = inlineValue; continue }
                    guard index < arguments.count else {
                        throw .usage("Missing value for '\(name)'.", subcommand: subcommand)
                    }
                    options[name] = arguments[index]
                    index += 1
                } else if allowed.contains(name), inlineValue == nil {
                    flags.insert(name)
                } else {
                    throw .usage("Unknown option '\(argument)'.", subcommand: subcommand)
                }
                continue
            }
            positionals.append(argument)
        }
        if positionals.count > maxPositionals, !flags.contains("--help") {
            throw .usage("Unexpected argument '\(positionals[maxPositionals])'.", subcommand: subcommand)
        }
    }

    var wantsHelp: Bool { flags.contains("--help") }
    var wantsJSON: Bool { flags.contains("--json") }
}
