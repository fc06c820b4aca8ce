import SwitchbackFiles
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
    /// The bad verdict the target build had before an explicit switch put it back on trial.
    public var rearmed: SlotHealth?
}

extension StateStore {
    /// Sets the rollback flag under the directory's lock: the state file is replaced
    /// atomically and durably, then the switch is appended to the history. The state records
    /// the builds (SHA-256) the choice moved from and to. A rollback by an operator or a
    /// directive also marks the build it moves away from bad (`markedBy` its source), in the
    /// same locked step: automatic rollback never returns to it, wherever a later release
    /// puts it. If an earlier writer was killed between the state and the history, its
    /// switch is recorded first. A damaged state file is moved aside and replaced; one from a
    /// newer format is refused (`.stateFromNewerFormat`).
    public func setRollback(_ rollback: Bool, source: ChoiceSource, reason: String?, manifest: Manifest,
                            now: Int64 = currentUnixTime()) throws(SwitchbackError) -> SwitchOutcome {
        try directory.prepare()
        return try FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            try setRollbackLocked(rollback, source: source, reason: reason, manifest: manifest, now: now)
        }
    }

    /// `setRollback` for a caller that holds the directory's lock.
    func setRollbackLocked(_ rollback: Bool, source: ChoiceSource, reason: String?, manifest: Manifest,
                           now: Int64) throws(SwitchbackError) -> SwitchOutcome {
        let history = HistoryLog(path: directory.historyPath)
        directory.removeStaleTemporaryFiles()
        let before = load()
        var movedTo: String?
        if let problem = before.problem {
            if problem.code == .stateFromNewerFormat {
                throw SwitchbackError(.stateFromNewerFormat, "\(problem.message) Use that version's rollbackctl; this one will not overwrite it.", path: directory.statePath)
            }
            let aside = directory.statePath + ".damaged-\(now)"
            if (try? FileSystem.rename(directory.statePath, toName: "state.damaged-\(now)")) != nil { movedTo = aside }
        } else if !before.isFirstStart {
            try recordInterruptedSwitch(before.state, in: history)
        }
        let from = BuildIdentity(manifest, rollback ? .current : .previous)
        let to = BuildIdentity(manifest, rollback ? .previous : .current)
        let health = HealthStore(directory: directory)
        let flagChanges = before.switchChangesFlag(rollback: rollback, from: from)
        // An operator's, a directive's or an app's words: one line, no control, before they are stored.
        let reason = reason.map { Limits.truncated(OutsideText($0, limit: Limits.storedReasonBytes).text) }
        // The verdicts the switch writes, by the one rule (`HealthRecord.recordSwitch`), which
        // status also applies to plan the start that finishes an interrupted switch.
        var record = health.load().record
        let effect = record.recordSwitch(rollback: rollback, source: source, reason: reason, flagChanges: flagChanges, manifest: manifest, now: now)
        if effect.changed {
            try health.updateLocked(durable: true) { (stored: inout HealthRecord) throws(SwitchbackError) in
                stored.recordSwitch(rollback: rollback, source: source, reason: reason, flagChanges: flagChanges, manifest: manifest, now: now)
            }
        }
        guard flagChanges else {
            return SwitchOutcome(changed: false, before: before, damagedFileMovedTo: movedTo, rearmed: effect.rearmed)
        }
        let state = PersistedState(rollback: rollback, source: source, reason: reason, changedAt: now,
                                   fromBuild: from, toBuild: to)
        try save(state)
        try history.append(SwitchHistoryEvent(time: now, kind: .switch, from: before.state.slot, to: state.slot, source: source, reason: reason))
        return SwitchOutcome(changed: true, before: before, damagedFileMovedTo: movedTo, rearmed: effect.rearmed)
    }

    /// Records that a new release superseded a rollback (see `StartPlan.supersededRollback`):
    /// the flag is cleared (source `default`, with a reason naming both builds) and the
    /// history gets a `release` event. Does nothing when another writer got there first.
    /// Returns the event written, if any.
    @discardableResult
    public func recordSupersedingRelease(manifest: Manifest, now: Int64 = currentUnixTime()) throws(SwitchbackError) -> SwitchHistoryEvent? {
        try directory.prepare()
        return try FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) -> SwitchHistoryEvent? in
            let before = load()
            guard before.problem == nil, let superseded = StartPlan.supersededRollback(before.state, manifest: manifest) else { return nil }
            let current = BuildIdentity(manifest, .current)
            let reason = StartPlan.supersessionReason(superseded, current: current)
            let state = PersistedState(rollback: false, source: .default, reason: reason, changedAt: now,
                                       fromBuild: superseded.toBuild, toBuild: current)
            try save(state)
            let event = SwitchHistoryEvent(time: now, kind: .release, from: .previous, to: .current, source: .default, reason: reason)
            try HistoryLog(path: directory.historyPath).append(event)
            return event
        }
    }

    /// Appends the switch that wrote `state` if the history's last switch does not lead to it
    /// (its writer died after saving the state and before appending).
    private func recordInterruptedSwitch(_ state: PersistedState, in history: HistoryLog) throws(SwitchbackError) {
        guard state.source != .default else { return }
        let last = try history.read().events.last { $0.kind == .switch }
        guard last?.to != state.slot else { return }
        let note = "recorded late: the writer was interrupted before it could record this switch"
        try history.append(SwitchHistoryEvent(time: state.changedAt ?? currentUnixTime(), kind: .switch, from: state.slot.other,
                                        to: state.slot, source: state.source,
                                        reason: state.reason.map { "\($0) (\(note))" } ?? note))
    }
}

extension LoadedState {
    /// Whether a switch to `rollback`, away from the build `from`, writes the flag: false when
    /// a readable state already says so for the same builds.
    public func switchChangesFlag(rollback: Bool, from: BuildIdentity) -> Bool {
        let sameBuilds = state.fromBuild.map { $0.sha256 == from.sha256 } ?? true
        return problem != nil || isFirstStart || state.rollback != rollback || !sameBuilds
    }
}
