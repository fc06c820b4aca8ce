import SwitchbackCore

extension Workspace {
    /// Before any switch to the previous slot: has the current build convert its data back
    /// (see `DataDowngrade`), prints what it undid, and throws the refusal when the switch
    /// must not happen. `command` is what the user runs, for the message's advice.
    package func downgradeDataForRollback(force: Bool, source: ChoiceSource, reason: String?, command: String,
                                          _ console: Console) throws(CommandError) {
        let downgrade = DataDowngrade(bundleRoot: bundleRoot, manifest: manifest, directory: directory)
        let outcome = downgrade.run(force: force, source: source, reason: reason)
        let previous = manifest.previous.version
        for step in outcome.undone {
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
        switch outcome.status {
        case .done:
            return
        case .unavailable where force:
            console.error("Warning: \(downgrade.refusal(outcome, command: command)) Switching anyway (--force); the data is left as it is.")
        default:
            throw .failure(downgrade.refusal(outcome, command: command))
        }
    }
}
