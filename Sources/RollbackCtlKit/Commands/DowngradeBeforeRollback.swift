import SwitchbackCore

extension Workspace {
    /// Switches the flag through `Switcher` (a switch to the previous slot checks that slot,
    /// journals, has the current build convert its data back, then writes the flag), prints
    /// what the data conversion undid, and throws the refusal when the switch must not
    /// happen. `command` is what the user runs, for the message's advice.
    package func switchFlag(rollback: Bool, force: Bool = false, source: ChoiceSource, reason: String?,
                            command: String = "rollbackctl rollback", _ console: Console) throws(CommandError) -> SwitchOutcome {
        let result: Switcher.Result
        do {
            result = try switcher.perform(rollback: rollback, source: source, reason: reason, force: force, command: command)
        } catch {
            // Nothing was switched: the journal, the lock or the flag could not be written.
            throw .failure(error.message, code: .stateNotWritable)
        }
        if let note = result.note { console.error("Note: \(note)") }
        let previous = manifest.previous.version
        for step in result.downgrade?.undone ?? [] {
            switch step.method {
            case .revert:
                console.out("Data: reverted migration step \(step.step) so that \(previous) can read it.")
            case .restore where step.archive != nil:
                console.out("Data: restored the snapshot taken before migration step \(step.step); the newer data is archived at \(step.archive!).")
            case .restore:
                console.out("Data: migration step \(step.step) is undone by that restore.")
            default:
                console.out("Data: migration step \(step.step) could not be undone; its data is archived at \(step.archive ?? "(no data directory)") and \(previous) starts without it.")
            }
        }
        if let warning = result.warning { console.error("Warning: \(warning)") }
        if let refusal = result.refusal { throw .failure(refusal, code: .switchRefused) }
        guard let switched = result.switched else { throw .failure("The switch ended without an outcome.") }
        return switched
    }

    /// Finishes or undoes a switch an earlier command or start left half-done, and says so.
    package func recoverInterruptedSwitch(_ console: Console) {
        guard SwitchJournal.exists(in: directory), let note = switcher.recover() else { return }
        console.error("Note: \(note)")
    }

    package var switcher: Switcher { Switcher(bundleRoot: bundleRoot, manifest: manifest, directory: directory) }
}
