import SwitchbackCore

/// `rollback` and `rollforward`: set the flag (see `StateStore.setRollback`) and say what
/// the next start runs. A rollback first has the current build convert its data back for
/// the previous one (docs/data-safe-rollback.md); a refusal leaves the flag as it was.
struct RollbackCommand: Command {
    static let configuration = CommandConfiguration(
        name: "rollback",
        abstract: "Convert the data back, then persist the flag: run the previous slot.",
        overview: """
            Persist the rollback flag: the next start runs the previous slot.

            First the current build converts its data back so that the previous one can read
            it (reverting its migrations, or restoring the snapshot taken before them and
            archiving the newer data). When it cannot, nothing changes and this fails.
            """,
        options: [
            .init("--reason", .value("TEXT"), help: "Why, recorded in the state and the history."),
            .init("--force", help: """
                Roll back even when the data cannot be converted back: the
                data is archived (never deleted) and the previous build
                starts without it.
                """),
        ])

    let command: SwitchCommand

    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        command = SwitchCommand(workspace: try context.workspace(), rollback: true, reason: arguments.options["--reason"],
                                force: arguments.flags.contains("--force"))
    }

    func run(_ console: Console) throws(CommandError) { try command.run(console) }
}

struct RollforwardCommand: Command {
    static let configuration = CommandConfiguration(
        name: "rollforward",
        abstract: "Clear the flag: run the current slot.",
        overview: "Clear the rollback flag: the next start runs the current slot.",
        options: [.init("--reason", .value("TEXT"), help: "Why, recorded in the state and the history.")])

    let command: SwitchCommand

    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        command = SwitchCommand(workspace: try context.workspace(), rollback: false, reason: arguments.options["--reason"])
    }

    func run(_ console: Console) throws(CommandError) { try command.run(console) }
}

/// What `rollback` and `rollforward` share.
struct SwitchCommand {
    let workspace: Workspace
    let rollback: Bool
    let reason: String?
    /// Roll back even when the data cannot be converted back: archive it instead.
    var force = false

    func run(_ console: Console) throws(CommandError) {
        try workspace.checkTrusted()
        workspace.recoverInterruptedSwitch(console)
        let target: BuildSlot = rollback ? .previous : .current
        let outcome = try workspace.switchFlag(rollback: rollback, force: force, source: .cli, reason: reason, console)
        if let aside = outcome.damagedFileMovedTo, let problem = outcome.before.problem {
            console.error("Warning: The state file was damaged (\(problem.message)); it was moved to \(aside) and replaced.")
        }
        let version = workspace.manifest[target].version
        switch (outcome.changed, rollback) {
        case (true, true): console.out("Rolled back: the next start runs the previous slot (\(version)).")
        case (true, false): console.out("Rolled forward: the next start runs the current slot (\(version)).")
        case (false, true): console.out("Already rolled back: the next start runs the previous slot (\(version)); nothing changed.")
        case (false, false): console.out("Already rolled forward: the next start runs the current slot (\(version)); nothing changed.")
        }
        if let bad = outcome.rearmed {
            console.out("The \(target.rawValue) build (\(version)) was bad\(bad.note.map { " (\($0))" } ?? ""); it is back on trial with \(workspace.manifest.trialTries) tries.")
        }
        guard !rollback else { return }
        do { _ = try workspace.verifier().verify(target) } catch {
            console.error("Warning: \(error.message) The launcher will fall back to the \(target.other.rawValue) slot until it is fixed.")
        }
    }
}
