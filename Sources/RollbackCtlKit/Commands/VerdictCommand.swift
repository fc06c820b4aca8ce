import SwitchbackCore

/// `mark-good [SLOT]` and `mark-bad [SLOT]`: an operator's health verdict on the build in a
/// slot (default: the slot the next start runs). Marking the selected slot bad also moves
/// the flag to the other slot, so `status` and the next start agree.
struct MarkGoodCommand: Command {
    static let configuration = CommandConfiguration(
        name: "mark-good",
        abstract: "Mark a slot's build good: its starts are no longer counted.",
        overview: "Mark the build in SLOT good, durably: its starts are no longer counted.",
        arguments: [VerdictCommand.slotArgument])

    let command: VerdictCommand

    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        command = VerdictCommand(workspace: try context.workspace(), good: true, slotName: arguments.positionals.first)
    }

    func run(_ console: Console) throws(CommandError) { try command.run(console) }
}

struct MarkBadCommand: Command {
    static let configuration = CommandConfiguration(
        name: "mark-bad",
        abstract: "Mark a slot's build bad: the other slot runs.",
        overview: """
            Mark the build in SLOT bad: the launcher runs the other slot, and if the
            rollback flag selects SLOT it moves to the other slot.
            """,
        arguments: [VerdictCommand.slotArgument])

    let command: VerdictCommand

    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        command = VerdictCommand(workspace: try context.workspace(), good: false, slotName: arguments.positionals.first)
    }

    func run(_ console: Console) throws(CommandError) { try command.run(console) }
}

/// What `mark-good` and `mark-bad` share.
struct VerdictCommand {
    static let slotArgument = CommandConfiguration.Argument(
        "SLOT", help: "current or previous (default: the slot the next start runs).")

    let workspace: Workspace
    let good: Bool
    let slotName: String?

    func run(_ console: Console) throws(CommandError) {
        try workspace.checkTrusted()
        workspace.recoverInterruptedSwitch(console)
        let slot: BuildSlot
        if let slotName {
            guard let named = BuildSlot(rawValue: slotName) else {
                throw .usage("SLOT must be 'current' or 'previous', not '\(slotName)'.", subcommand: good ? "mark-good" : "mark-bad")
            }
            slot = named
        } else {
            slot = try StatusReport(workspace: workspace).activeSlot
        }
        let manifest = workspace.manifest
        let version = manifest[slot].version
        do {
            try workspace.health.update(durable: true) { (record: inout HealthRecord) throws(SwitchbackError) in
                record.mark(BuildIdentity(manifest, slot), good ? .good : .bad(by: .cli), tries: manifest.trialTries,
                            note: good ? "marked good with rollbackctl" : "marked bad with rollbackctl", at: currentUnixTime())
            }
            // A verdict is no history event: the metrics file (slot health) is rewritten here.
            Observer.refreshMetrics(in: workspace.directory, manifest: manifest)
            if good {
                console.out("Marked the \(slot.rawValue) build (\(version)) good: its starts are no longer counted.")
                return
            }
            console.out("Marked the \(slot.rawValue) build (\(version)) bad.")
            let loaded = workspace.store.load()
            let otherHealth = workspace.health.load().record.health(of: slot.other, in: manifest)
            if loaded.state.slot == slot, HealthPolicy.handover(to: otherHealth) == .switchToOther {
                _ = try workspace.switchFlag(rollback: slot.other == .previous, source: .cli,
                                             reason: "the \(slot.rawValue) build (\(version)) was marked bad with rollbackctl", console)
                console.out("The next start runs the \(slot.other.rawValue) slot (\(manifest[slot.other].version)).")
            }
        } catch let error as CommandError {
            throw error
        } catch let error as SwitchbackError {
            throw .failure(error.message)
        } catch {
            throw .failure("\(error)")
        }
    }
}
