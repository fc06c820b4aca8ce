#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What one ledger line says. A ledger is the ordered list of these; its state is their fold.
indirect enum LedgerRecord: Sendable, Equatable {
    /// The app's version changed (or was seen for the first time) in this scope.
    case history(HistoryEvent)
    /// The operating system's version changed (or was seen for the first time).
    case system(SystemEvent)
    /// A migration step started; without a matching end it was interrupted.
    case stepBegan(name: String, running: RunningVersion, date: Date)
    /// A migration step finished.
    case stepEnded(name: String, running: RunningVersion, date: Date, outcome: StepOutcome)
    /// The scope's data exists as of `floor`: steps at or below it never run.
    case initialized(floor: Version, isBaseline: Bool, date: Date)
    /// Every step and hook for `running` has completed.
    case migrated(RunningVersion, date: Date)
    /// The migration record was cleared (``Migrator/reset(scope:)``).
    case reset(date: Date)
    /// A snapshot of the data directory was taken before the step `name`.
    case snapshot(name: String, path: String, date: Date)
    /// A downgrade began undoing the step `name` by `method`; without a matching
    /// ``undone`` entry it was interrupted. `archive` is where the data set is moved.
    case undoBegan(name: String, method: UndoMethod, archive: String?, date: Date)
    /// A downgrade undid the step `name`: it is no longer applied and runs again on upgrade.
    case undone(name: String, method: UndoMethod, archive: String?, date: Date)
    /// The revert of the step `name` threw: the undo is over, the step stays applied, and
    /// the next start does not retry it (the next downgrade does).
    case undoFailed(name: String, method: UndoMethod, date: Date)
    /// A line written by a newer AppVersions; kept as it is and otherwise ignored.
    case unknown(String)
}
