#if canImport(Glibc)
import Glibc
#endif
import SwitchbackCore

/// `promote`: ends the open probation early, the build good.
struct PromoteCommand: Command {
    static let configuration = CommandConfiguration(
        name: "promote",
        abstract: "End the build's bake window early as good.",
        overview: """
            End the probation (bake window) of the serving build early: its analysis stops and
            the build stays, marked good. Also ends an inconclusive probation. The supervisor
            acts on the request; this command waits for it (up to 60 s).
            """)

    let command: ProbationRequestCommand

    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        command = ProbationRequestCommand(workspace: try context.workspace(), promote: true)
    }

    func run(_ console: Console) throws(CommandError) { try command.run(console) }
}

/// `abort`: ends the open probation early, the build bad and rolled back.
struct AbortCommand: Command {
    static let configuration = CommandConfiguration(
        name: "abort",
        abstract: "End the build's bake window early as bad: it is rolled back.",
        overview: """
            End the probation (bake window) of the serving build early as failed: the build is
            marked bad and the other slot takes over, live, as after a crash loop. Also ends an
            inconclusive probation. The supervisor acts on the request; this command waits for
            it (up to 60 s: the data is converted back first when the other build needs it).
            """)

    let command: ProbationRequestCommand

    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        command = ProbationRequestCommand(workspace: try context.workspace(), promote: false)
    }

    func run(_ console: Console) throws(CommandError) { try command.run(console) }
}

/// What `promote` and `abort` share: the checks, the request file, the wait.
struct ProbationRequestCommand {
    let workspace: Workspace
    let promote: Bool
    /// How long the command waits for the supervisor to act.
    static let waitMilliseconds = 60_000

    func run(_ console: Console) throws(CommandError) {
        try workspace.checkTrusted()
        let directory = workspace.directory
        let supervisor: LiveSupervisor
        switch SupervisorIdentity.check(in: directory) {
        case .live(let live) where live.actsFor(bundleRoot: workspace.bundleRoot):
            supervisor = live
        case .stale(_, let sentence):
            throw .failure("\(sentence) No supervisor runs for the state directory \(directory.path), so nothing is on probation; a bake window runs only under the supervisor (supervise mode).")
        default:
            throw .failure("No supervisor runs for the state directory \(directory.path), so nothing is on probation; a bake window runs only under the supervisor (supervise mode).")
        }
        let record: ProbationRecord?
        do { record = try ProbationRecord.load(in: directory) } catch { throw .failure(error.message) }
        guard let record, record.state.isOpen else {
            let last = record.map { "; the last probation, of the \($0.slot.rawValue) build (\($0.version)), ended \($0.state.rawValue)" } ?? ""
            throw .failure("Nothing is on probation in \(directory.path)\(last).")
        }
        let verb = promote ? "promote" : "abort"
        do {
            try FileSystem.replace(ProbationRecord.requestPath(in: directory), with: Array("\(verb) \(record.build)\n".utf8), durable: false)
        } catch {
            throw .failure(error.message, code: .stateNotWritable)
        }
        let what = "the \(record.slot.rawValue) build (\(record.version))"
        var waited = 0
        while waited < Self.waitMilliseconds {
            var pause = timespec(tv_sec: 0, tv_nsec: 50_000_000)
            nanosleep(&pause, nil)
            waited += 50
            // Asked before the record is read: a supervisor that acted and then exited shows it.
            let gone = !supervisor.isRunning
            let exited = "The supervisor (pid \(supervisor.pid)) exited before it acted on the request; it stays in \(ProbationRecord.requestPath(in: directory)) and is acted on when the supervisor starts again."
            let aborted = "Aborted \(what): it is marked bad and the \(record.slot.other.rawValue) slot (\(workspace.manifest[record.slot.other].version)) takes over."
            guard let now = try? ProbationRecord.load(in: directory), now.build == record.build else {
                // The other build may already be on probation in its turn (the record is
                // replaced once it is ready): the abort shows in the build's verdict, which
                // only an operator's rejection makes bad by the command line.
                if !promote, abortShows(in: record) {
                    console.out(aborted)
                    return
                }
                if gone { throw .failure(exited) }
                continue
            }
            switch now.state {
            case .promoted:
                console.out("Promoted \(what): its bake window ended early and it stays, marked good.")
                return
            case .aborted:
                console.out(aborted)
                return
            case .baking, .held, .inconclusive:
                if gone { throw .failure(exited) }
                continue
            case .passed, .failed, .wouldRollBack, .wouldHold:
                throw .failure("The bake window of \(what) ended \(now.state.rawValue) before the request was acted on: \(now.result ?? "no result recorded").")
            }
        }
        throw .failure("The supervisor (pid \(supervisor.pid)) did not act on the request within \(Self.waitMilliseconds / 1000) s; it stays in \(ProbationRecord.requestPath(in: directory)) and is acted on when the supervisor next looks.")
    }

    /// Whether the build of `record` is now rejected by an operator (what an abort leaves).
    func abortShows(in record: ProbationRecord) -> Bool {
        let manifest = workspace.manifest
        guard manifest[record.slot].sha256 == record.build else { return false }
        let health = HealthStore(directory: workspace.directory).load().record
            .health(of: BuildIdentity(manifest, record.slot), tries: manifest.trialTries)
        return health.isBad && health.markedBy == .cli
    }
}

/// `bake-window SECONDS|default`: the operator's override of `analysis.window_s`.
struct BakeWindowCommand: Command {
    static let configuration = CommandConfiguration(
        name: "bake-window",
        abstract: "Set the bake window of the next probations, or go back to the manifest's.",
        overview: """
            Set how long a new build stays on probation (analysis.window_s), overriding the
            manifest, in the state directory's analysis.override; 0 turns probation off.
            'default' removes the override. The probation under way keeps its end; the
            next one gets the new window.
            """,
        arguments: [.init("SECONDS", required: true, help: "Whole seconds (0 to 604800, a week), or 'default'.", missing: "the window in seconds, or 'default'")])

    static let maximumSeconds = AnalysisSpec.maximumWindowSeconds

    let workspace: Workspace
    /// Nil: back to the manifest's.
    let seconds: Int?

    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        let text = arguments.positionals.first ?? ""
        if text == "default" {
            seconds = nil
        } else {
            guard let value = Int(text), (0...Self.maximumSeconds).contains(value) else {
                throw .usage("SECONDS must be a whole number from 0 to \(Self.maximumSeconds) or 'default', not '\(text)'.", subcommand: "bake-window")
            }
            seconds = value
        }
        workspace = try context.workspace()
    }

    func run(_ console: Console) throws(CommandError) {
        try workspace.checkTrusted()
        let manifest = workspace.manifest
        guard manifest.settings["analysis.window_s"] != nil || manifest.settings["analysis.checks"] != nil else {
            throw .failure("The bundle's manifest configures no analysis (analysis.checks), so no build goes on probation; rebuild the bundle with switchback-bundle --analysis FILE.")
        }
        let path = ProbationRecord.overridePath(in: workspace.directory)
        var kept = KeyValueText()
        do {
            // Before the first start there is no state directory yet.
            try workspace.directory.prepare()
            if let bytes = try FileSystem.read(path, limit: 64 << 10) {
                let old = try KeyValueText.parse(bytes, describing: "The override \(path)")
                for index in 0..<old.count where old.key(at: index) != "analysis.window_s" { kept.append(old.key(at: index), old.value(at: index)) }
            }
            if let seconds { kept.append("analysis.window_s", String(seconds)) }
            if kept.count == 0 {
                try? FileSystem.remove(path)
            } else {
                try FileSystem.replace(path, with: kept.serialized(), durable: true)
            }
        } catch {
            throw .failure(error.message, code: .stateNotWritable)
        }
        let manifestWindow = manifest.settings["analysis.window_s"].flatMap { Int($0) } ?? 0
        switch seconds {
        case nil: console.out("The bake window is the manifest's again: \(manifestWindow) s. The probation under way keeps its end.")
        case 0: console.out("Probation is off: the next builds are not put on probation (the manifest says \(manifestWindow) s; 'rollbackctl bake-window default' restores it).")
        case let value?: console.out("The bake window is now \(value) s (the manifest says \(manifestWindow) s). The probation under way keeps its end; the next one gets \(value) s.")
        }
    }
}
