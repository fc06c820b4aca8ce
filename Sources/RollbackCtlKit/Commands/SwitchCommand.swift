import SwitchbackCore

/// `rollback` and `rollforward`: set the flag (see `StateStore.setRollback`) and say what
/// the next start runs.
struct SwitchCommand {
    let workspace: Workspace
    let rollback: Bool
    let reason: String?

    func run(_ console: Console) throws(CommandError) {
        try workspace.checkTrusted()
        let target: BuildSlot = rollback ? .previous : .current
        let outcome: SwitchOutcome
        do { outcome = try workspace.store.setRollback(rollback, source: .cli, reason: reason) } catch {
            throw .failure(error.message)
        }
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
        do { _ = try workspace.verifier().verify(target) } catch {
            console.error("Warning: \(error.message) The launcher will fall back to the \(target.other.rawValue) slot until it is fixed.")
        }
    }
}
