import Foundation
import SwitchbackCore

/// `rollback` and `rollforward`: set the flag under the lock, durably, and record the
/// switch in the history. A damaged state file is moved aside (never deleted) and replaced.
struct SwitchCommand {
    let workspace: Workspace
    let rollback: Bool
    let reason: String?

    func run(_ console: Console) throws(CommandError) {
        try workspace.checkTrusted()
        let target: BuildSlot = rollback ? .previous : .current
        let directory = workspace.directory
        let outcome: (changed: Bool, notes: [String])
        do {
            try directory.prepare()
            outcome = try FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
                var notes: [String] = []
                let loaded = workspace.store.load()
                if let problem = loaded.problem {
                    if problem.code == .stateFromNewerFormat {
                        throw SwitchbackError(.stateFromNewerFormat, "\(problem.message) Use that version's rollbackctl; this one will not overwrite it.")
                    }
                    let aside = directory.statePath + ".damaged-\(currentUnixTime())"
                    if rename(directory.statePath, aside) == 0 {
                        notes.append("The state file was damaged (\(problem.message)); it was moved to \(aside) and replaced.")
                    }
                }
                if loaded.problem == nil, !loaded.isFirstStart, loaded.state.rollback == rollback {
                    return (false, notes)
                }
                let now = currentUnixTime()
                let state = PersistedState(rollback: rollback, source: .cli, reason: reason, changedAt: now)
                try workspace.store.save(state)
                try workspace.history.append(HistoryEvent(time: now, kind: .switch, from: loaded.state.slot, to: target, source: .cli, reason: reason))
                return (true, notes)
            }
        } catch {
            throw .failure(error.message)
        }
        for note in outcome.notes { console.error("Warning: \(note)") }
        let version = workspace.manifest[target].version
        if outcome.changed {
            console.out(rollback
                ? "Rolled back: the next start runs the previous slot (\(version))."
                : "Rolled forward: the next start runs the current slot (\(version)).")
        } else {
            console.out(rollback
                ? "Already rolled back: the next start runs the previous slot (\(version)); nothing changed."
                : "Already rolled forward: the next start runs the current slot (\(version)); nothing changed.")
        }
        do { _ = try workspace.verifier().verify(target) } catch {
            console.error("Warning: \(error.message) The launcher will fall back to the \(target.other.rawValue) slot until it is fixed.")
        }
    }
}
