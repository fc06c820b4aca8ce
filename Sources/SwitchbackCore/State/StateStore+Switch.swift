#if canImport(Glibc)
import Glibc
#endif

/// What `StateStore.setRollback` did.
public struct SwitchOutcome: Sendable, Equatable {
    /// False when the flag already said so and nothing was written.
    public var changed: Bool
    /// What was there before.
    public var before: LoadedState
    /// Where a damaged state file was moved (it is kept, never deleted).
    public var damagedFileMovedTo: String?
}

extension StateStore {
    /// Sets the rollback flag under the directory's lock: the state file is replaced
    /// atomically and durably, then the switch is appended to the history. If an earlier
    /// writer was killed between those two writes, its switch is recorded first, so the
    /// history stays complete. A damaged state file is moved aside and replaced; one from a
    /// newer format is refused (`.stateFromNewerFormat`).
    public func setRollback(_ rollback: Bool, source: ChoiceSource, reason: String?,
                            now: Int64 = currentUnixTime()) throws(SwitchbackError) -> SwitchOutcome {
        try directory.prepare()
        return try FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            let history = HistoryLog(path: directory.historyPath)
            let before = load()
            var movedTo: String?
            if let problem = before.problem {
                if problem.code == .stateFromNewerFormat {
                    throw SwitchbackError(.stateFromNewerFormat, "\(problem.message) Use that version's rollbackctl; this one will not overwrite it.", path: directory.statePath)
                }
                let aside = directory.statePath + ".damaged-\(now)"
                if rename(directory.statePath, aside) == 0 { movedTo = aside }
            } else if !before.isFirstStart {
                try recordInterruptedSwitch(before.state, in: history)
            }
            if before.problem == nil, !before.isFirstStart, before.state.rollback == rollback {
                return SwitchOutcome(changed: false, before: before, damagedFileMovedTo: movedTo)
            }
            let state = PersistedState(rollback: rollback, source: source, reason: reason, changedAt: now)
            try save(state)
            try history.append(HistoryEvent(time: now, kind: .switch, from: before.state.slot, to: state.slot, source: source, reason: reason))
            return SwitchOutcome(changed: true, before: before, damagedFileMovedTo: movedTo)
        }
    }

    /// Appends the switch that wrote `state` if the history's last switch does not lead to it
    /// (its writer died after saving the state and before appending).
    private func recordInterruptedSwitch(_ state: PersistedState, in history: HistoryLog) throws(SwitchbackError) {
        guard state.source != .default else { return }
        let last = try history.read().events.last { $0.kind == .switch }
        guard last?.to != state.slot else { return }
        let note = "recorded late: the writer was interrupted before it could record this switch"
        try history.append(HistoryEvent(time: state.changedAt ?? currentUnixTime(), kind: .switch, from: state.slot.other,
                                        to: state.slot, source: state.source,
                                        reason: state.reason.map { "\($0) (\(note))" } ?? note))
    }
}
