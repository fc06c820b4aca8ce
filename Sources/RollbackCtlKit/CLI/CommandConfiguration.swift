/// What one subcommand declares: its name, its help and every option it takes, with the
/// kind of value each one wants. The parser accepts exactly these, and the help and the
/// usage errors are rendered from them (`Help`), so they cannot drift apart.
package struct CommandConfiguration: Sendable {
    /// One `--name` the command takes.
    package struct Option: Sendable {
        /// What the option takes after its name.
        package enum Kind: Sendable, Equatable {
            /// No value: present or not (`--json`).
            case flag
            /// One value, shown as `placeholder` (`--reason TEXT`); given twice, the last wins.
            case value(String)
            /// A value that may be given several times, each kept in order (`--key FILE`).
            case repeated(String)
        }

        package var name: String
        package var kind: Kind
        /// Whether the usage line shows it outside brackets (the command checks it).
        package var isRequired: Bool
        /// Its help; lines after the first continue under the first.
        package var help: String

        package init(_ name: String, _ kind: Kind = .flag, required: Bool = false, help: String) {
            self.name = name
            self.kind = kind
            isRequired = required
            self.help = help
        }

        /// `--name` followed by its value's placeholder, as help and usage show it.
        package var synopsis: String {
            switch kind {
            case .flag: return name
            case .value(let placeholder), .repeated(let placeholder): return "\(name) \(placeholder)"
            }
        }

        package var takesValue: Bool { kind != .flag }
    }

    /// A positional argument.
    package struct Argument: Sendable {
        /// How help and usage name it (`SLOT`, `<path>`).
        package var name: String
        package var isRequired: Bool
        /// Its help line in ARGUMENTS (nil: none; then the usage line says enough).
        package var help: String?
        /// What "Missing ..." names when a required argument is absent ("the library's path").
        package var missing: String

        package init(_ name: String, required: Bool = false, help: String? = nil, missing: String? = nil) {
            self.name = name
            isRequired = required
            self.help = help
            self.missing = missing ?? "'\(name)'"
        }
    }

    /// The subcommand, as typed (`status`, `mark-good`).
    package var name: String
    /// One line for the tool's SUBCOMMANDS list.
    package var abstract: String
    /// The OVERVIEW paragraph(s) of its own help.
    package var overview: String
    package var arguments: [Argument]
    package var options: [Option]
    /// Usage lines after "rollbackctl " when the generated one would not fit on a line
    /// (nil: generated from the arguments and options).
    package var usageOverride: [String]?
    /// Extra sections after OPTIONS: title and body (`EXIT STATUS`).
    package var sections: [(title: String, body: String)]
    /// Whether rollbackctl-remote runs it (it links networking and libcrypto, which
    /// rollbackctl itself must not pay for at start).
    package var isRemote: Bool

    package init(name: String, abstract: String, overview: String, arguments: [Argument] = [], options: [Option] = [],
                 usage: [String]? = nil, sections: [(title: String, body: String)] = [], isRemote: Bool = false) {
        self.name = name
        self.abstract = abstract
        self.overview = overview
        self.arguments = arguments
        self.options = options
        usageOverride = usage
        self.sections = sections
        self.isRemote = isRemote
    }

    /// The usage lines, without "USAGE: ": `rollbackctl NAME ARGS OPTIONS`.
    package var usage: [String] {
        if let usageOverride { return usageOverride.map { "rollbackctl \($0)" } }
        var words = ["rollbackctl", name]
        for argument in arguments { words.append(argument.isRequired ? argument.name : "[\(argument.name)]") }
        for option in options {
            let suffix: String
            if case .repeated = option.kind { suffix = " ..." } else { suffix = "" }
            words.append(option.isRequired ? option.synopsis + suffix : "[\(option.synopsis)]\(suffix)")
        }
        return [words.joined(separator: " ")]
    }

    package func option(named name: String) -> Option? { options.first { $0.name == name } }
}

/// The tool itself: what `rollbackctl --help` shows above its subcommands.
package enum ToolConfiguration {
    package static let version = "rollbackctl (Switchback) 0.1.0"
    package static let overview = "See and switch which build of AppCore a Switchback bundle runs."
    package static let usage = "rollbackctl [--state-dir DIR] [--bundle DIR] <subcommand> [options]"

    /// Options every subcommand accepts, before or after its name.
    package static let globalOptions: [CommandConfiguration.Option] = [
        .init("--state-dir", .value("DIR"), help: """
            The state directory (default: $SWITCHBACK_STATE_DIR, else
            $XDG_STATE_HOME/<app id>, else ~/.local/state/<app id>).
            """),
        .init("--bundle", .value("DIR"), help: "The bundle (default: the directory above this executable's bin/)."),
    ]
}
