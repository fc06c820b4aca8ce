import SwitchbackCore

/// `rollback` and `rollforward`: set the flag (see `StateStore.setRollback`) and say what
/// the next start runs. A rollback first has the current build convert its data back for
/// the previous one (docs/data-safe-rollback.md); a refusal leaves the flag as it was.
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
        rearmIfBad(target, console)
        if outcome.changed && rollback {
            console.out("The current build (\(workspace.manifest.current.version)) is marked bad: automatic rollback never returns to it, and a release that moves it to the previous slot keeps it bad.")
        }
        guard !rollback else { return }
        do { _ = try workspace.verifier().verify(target) } catch {
            console.error("Warning: \(error.message) The launcher will fall back to the \(target.other.rawValue) slot until it is fixed.")
        }
    }

    /// Operator intent wins: switching to a bad build puts it back on trial with fresh tries.
    private func rearmIfBad(_ slot: BuildSlot, _ console: Console) {
        let manifest = workspace.manifest
        let before = workspace.health(of: slot, in: workspace.health.load().record)
        guard before.isBad else { return }
        do {
            try workspace.health.update(durable: true) { (record: inout HealthRecord) throws(SwitchbackError) in
                var health = SlotHealth.fresh(build: manifest[slot].sha256, tries: manifest.trialTries, version: manifest[slot].version)
                health.lastGoodAt = before.lastGoodAt
                health.changedAt = currentUnixTime()
                health.note = "put back on trial by \(rollback ? "rollback" : "rollforward")"
                record.set(health)
            }
            console.out("The \(slot.rawValue) build (\(manifest[slot].version)) was bad\(before.note.map { " (\($0))" } ?? ""); it is back on trial with \(manifest.trialTries) tries.")
        } catch {
            console.error("Warning: could not put the \(slot.rawValue) build back on trial: \(error.message)")
        }
    }
}
