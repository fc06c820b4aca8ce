/// A subcommand's arguments, split into options with values, flags and positionals. Knows
/// only what the subcommand declares, so a typo is a usage error, not a silent no-op.
package struct ParsedArguments {
    package var options: [String: String] = [:]
    /// Every value of each `repeated` option, in order.
    package var lists: [String: [String]] = [:]
    package var flags: Set<String> = []
    package var positionals: [String] = []

    /// Parses `arguments` for `subcommand`, accepting `--name value` and `--name=value` for
    /// `valued` options and bare `flags`; a `repeated` option may be given several times.
    /// `-h`/`--help` is always a flag.
    init(_ arguments: [String], subcommand: String, valued: Set<String> = [], repeated: Set<String> = [],
         flags allowed: Set<String> = [], maxPositionals: Int = 0) throws(CommandError) {
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
                if valued.contains(name) || repeated.contains(name) {
                    let value: String
                    if let inlineValue {
                        value = inlineValue
                    } else {
                        guard index < arguments.count else {
                            throw .usage("Missing value for '\(name)'.", subcommand: subcommand)
                        }
                        value = arguments[index]
                        index += 1
                    }
                    if repeated.contains(name) { lists[name, default: []].append(value) } else { options[name] = value }
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

    package var wantsHelp: Bool { flags.contains("--help") }
    package var wantsJSON: Bool { flags.contains("--json") }
}
