import SwitchbackCore
#if canImport(Glibc)
import Glibc
#endif

/// rollbackctl's command line: global options, then one subcommand.
public enum RollbackCtl {
    /// Runs the command line (without argv[0]) and returns the exit code: 0, 64 for bad
    /// usage, 1 for other failures (and for rollbackctl-remote's `rollout`, 3 while it waits
    /// for an operator, 78 for a bad plan). Errors go to stderr as "Error: ...".
    public static func main(_ arguments: [String], console: Console = .standard) -> Int32 {
        main(arguments, console: console, remote: [])
    }

    /// The same, with the commands of the remote subcommands (`sync`, `keygen`, `sign`):
    /// rollbackctl passes none and executes `rollbackctl-remote` for them; rollbackctl-remote
    /// passes its own.
    package static func main(_ arguments: [String], console: Console, remote: [any Command.Type]) -> Int32 {
        do {
            try dispatch(arguments, console: console, remote: remote)
            return 0
        } catch {
            if error.code == .waiting {
                console.out(error.message)
                return error.exitCode
            }
            console.error("Error: \(error.message)")
            if error.code == .usage {
                console.error(Help.usageLine(error.subcommand.flatMap(CommandTable.configuration(named:))))
                console.error("  See 'rollbackctl\(error.subcommand.map { " " + $0 } ?? "") --help' for help.")
            }
            return error.exitCode
        }
    }

    static func dispatch(_ arguments: [String], console: Console, remote: [any Command.Type]) throws(CommandError) {
        var context = CommandContext()
        var rest = arguments[...]
        while let first = rest.first, first.hasPrefix("-") {
            rest = rest.dropFirst()
            switch first {
            case "-h", "--help":
                console.out(Help.tool(CommandTable.all))
                return
            case "--version":
                console.out(ToolConfiguration.version)
                return
            case "--state-dir", "--bundle":
                guard let value = rest.first else { throw .usage("Missing value for '\(first)'.", subcommand: nil) }
                rest = rest.dropFirst()
                if first == "--state-dir" { context.stateDirectory = value } else { context.bundle = value }
            default:
                if first.hasPrefix("--state-dir=") { context.stateDirectory = String(first.dropFirst(12)) }
                else if first.hasPrefix("--bundle=") { context.bundle = String(first.dropFirst(9)) }
                else { throw .usage("Unknown option '\(first)'.", subcommand: nil) }
            }
        }
        guard let name = rest.first else { throw .usage("Missing subcommand.", subcommand: nil) }
        guard let configuration = CommandTable.configuration(named: name) else {
            throw .usage("Unknown subcommand '\(name)'.", subcommand: nil)
        }
        let parsed = try ParsedArguments(Array(rest.dropFirst()), for: configuration)
        if parsed.wantsHelp { console.out(Help.command(configuration)); return }
        if let reason = parsed.options["--reason"], reason.utf8.count > Limits.reasonBytes {
            throw .usage("The reason is \(reason.utf8.count) bytes long; give at most \(Limits.reasonBytes) (the history and status show it on one line).", subcommand: name)
        }
        // The global options are also accepted after the subcommand.
        context.stateDirectory = parsed.options["--state-dir"] ?? context.stateDirectory
        context.bundle = parsed.options["--bundle"] ?? context.bundle

        let command: any Command.Type
        if configuration.isRemote {
            guard let implementation = remote.first(where: { $0.configuration.name == name }) else { try executeRemote(arguments) }
            command = implementation
        } else {
            guard let implementation = CommandTable.localCommand(named: name) else {
                throw .usage("Unknown subcommand '\(name)'.", subcommand: nil)
            }
            command = implementation
        }
        try command.init(parsed, context).run(console)
    }

    /// Replaces this process with `rollbackctl-remote` from the same directory, with the same
    /// arguments (global options included), once it passed the checks a slot passes
    /// (`ProgramFile.open`: path, owner, mode, a regular executable ELF file): it runs as
    /// whoever runs rollbackctl, root included. Runs the very descriptor it checked
    /// (`fexecve(3)`). Throws the refusal's sentence (exit 1) when the program is refused.
    static func executeRemote(_ arguments: [String]) throws(CommandError) -> Never {
        guard let executable = FileSystem.resolved("/proc/self/exe") else {
            throw .failure("Cannot find this executable through /proc/self/exe, so not rollbackctl-remote beside it either.")
        }
        let path = FileSystem.parentDirectory(of: executable) + "/rollbackctl-remote"
        let program: ProgramFile
        do { program = try ProgramFile.open(path, what: "rollbackctl-remote program") } catch {
            if error.code == .fileNotFound {
                throw .failure("Cannot run \(path): \(String(cString: strerror(ENOENT))); it does the network and signing work of 'rollbackctl sync', 'keygen' and 'sign'; rebuild the bundle with scripts/bundle.")
            }
            throw .failure(error.message)
        }
        let error = program.execute([path] + arguments)
        throw .failure("Cannot run \(path): \(String(cString: strerror(error))); it does the network and signing work of 'rollbackctl sync', 'keygen' and 'sign'; rebuild the bundle with scripts/bundle.")
    }
}
