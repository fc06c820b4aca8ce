import SwitchbackCore
#if canImport(Glibc)
import Glibc
#endif

/// rollbackctl's command line: global options, then one subcommand.
public enum RollbackCtl {
    /// Runs a remote subcommand (`sync`, `keygen`, `sign`) after the shared parsing:
    /// the subcommand, its arguments, `--bundle` and `--state-dir`.
    package typealias RemoteRunner = (String, ParsedArguments, _ bundle: String?, _ stateDirectory: String?, Console) throws(CommandError) -> Void

    /// Runs the command line (without argv[0]) and returns the exit code: 0, 64 for bad
    /// usage, 1 for other failures. Errors go to stderr as "Error: ...".
    public static func main(_ arguments: [String], console: Console = .standard) -> Int32 {
        main(arguments, console: console, remote: nil)
    }

    /// The same, with the runner of the remote subcommands: rollbackctl passes none and
    /// executes `rollbackctl-remote` for them; rollbackctl-remote passes its own.
    package static func main(_ arguments: [String], console: Console, remote: RemoteRunner?) -> Int32 {
        do {
            try dispatch(arguments, console: console, remote: remote)
            return 0
        } catch {
            switch error {
            case .usage(let message, let subcommand):
                console.error("Error: \(message)")
                console.error(Help.usageLine(subcommand))
                console.error("  See 'rollbackctl\(subcommand.map { " " + $0 } ?? "") --help' for help.")
            case .failure(let message):
                console.error("Error: \(message)")
            }
            return error.exitCode
        }
    }

    static func dispatch(_ arguments: [String], console: Console, remote: RemoteRunner?) throws(CommandError) {
        var stateDirectory: String?
        var bundle: String?
        var rest = arguments[...]
        while let first = rest.first, first.hasPrefix("-") {
            rest = rest.dropFirst()
            switch first {
            case "-h", "--help":
                console.out(Help.main)
                return
            case "--version":
                console.out(Help.toolVersion)
                return
            case "--state-dir", "--bundle":
                guard let value = rest.first else { throw .usage("Missing value for '\(first)'.", subcommand: nil) }
                rest = rest.dropFirst()
                if first == "--state-dir" { stateDirectory = value } else { bundle = value }
            default:
                if first.hasPrefix("--state-dir=") { stateDirectory = String(first.dropFirst(12)) }
                else if first.hasPrefix("--bundle=") { bundle = String(first.dropFirst(9)) }
                else { throw .usage("Unknown option '\(first)'.", subcommand: nil) }
            }
        }
        guard let name = rest.first else { throw .usage("Missing subcommand.", subcommand: nil) }
        let tail = Array(rest.dropFirst())
        guard let help = Help.subcommands[name] else { throw .usage("Unknown subcommand '\(name)'.", subcommand: nil) }

        // --state-dir is also accepted after the subcommand.
        var valued: Set<String> = ["--state-dir", "--bundle"]
        var repeated: Set<String> = []
        var flags: Set<String> = []
        var positionals = 0
        switch name {
        case "status", "history": flags = ["--json"]
        case "sync": valued.formUnion(["--url", "--deadline-ms"]); flags = ["--background"]
        case "keygen": valued.insert("--out")
        case "sign":
            valued.formUnion(["--decision", "--reason", "--serial", "--expires-in", "--expires-at", "--issued-at",
                              "--rollout-percent", "--app-id", "--out", "--renew"])
            repeated = ["--key", "--applies-to"]
        case "rollback": valued.insert("--reason"); flags = ["--force"]
        case "rollforward": valued.insert("--reason")
        case "inspect": flags = ["--json"]; positionals = 1
        case "mark-good", "mark-bad": positionals = 1
        default: break
        }
        let parsed = try ParsedArguments(tail, subcommand: name, valued: valued, repeated: repeated, flags: flags,
                                         maxPositionals: positionals)
        if parsed.wantsHelp { console.out(help); return }
        if let reason = parsed.options["--reason"], reason.utf8.count > Limits.reasonBytes {
            throw .usage("The reason is \(reason.utf8.count) bytes long; give at most \(Limits.reasonBytes) (the history and status show it on one line).", subcommand: name)
        }
        stateDirectory = parsed.options["--state-dir"] ?? stateDirectory
        bundle = parsed.options["--bundle"] ?? bundle

        if Help.remoteSubcommands.contains(name) {
            guard let remote else { try executeRemote(arguments) }
            return try remote(name, parsed, bundle, stateDirectory, console)
        }

        if name == "inspect" {
            guard let path = parsed.positionals.first else { throw .usage("Missing the library's path.", subcommand: name) }
            return try InspectCommand(path: path, json: parsed.wantsJSON).run(console)
        }
        let workspace = try Workspace.open(bundle: bundle, stateDirectory: stateDirectory)
        switch name {
        case "status": try StatusCommand(workspace: workspace, json: parsed.wantsJSON).run(console)
        case "rollback", "rollforward":
            try SwitchCommand(workspace: workspace, rollback: name == "rollback", reason: parsed.options["--reason"],
                              force: parsed.flags.contains("--force")).run(console)
        case "history": try HistoryCommand(workspace: workspace, json: parsed.wantsJSON).run(console)
        case "verify": try VerifyCommand(workspace: workspace).run(console)
        case "mark-good", "mark-bad":
            try VerdictCommand(workspace: workspace, good: name == "mark-good", slotName: parsed.positionals.first).run(console)
        default: throw .usage("Unknown subcommand '\(name)'.", subcommand: nil)
        }
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
