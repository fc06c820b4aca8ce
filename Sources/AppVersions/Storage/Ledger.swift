#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A scope's state: the fold of its ledger entries, oldest first.
struct Ledger {
    /// App version transitions.
    var events: [HistoryEvent] = []
    /// Operating system transitions.
    var systemEvents: [SystemEvent] = []
    /// The version the scope's data was created at (first install) or declared at (baseline).
    var floor: Version?
    /// Whether ``floor`` came from a baseline rather than a first install.
    var isBaseline = false
    /// The last version whose steps and hooks all completed.
    var lastMigrated: RunningVersion?
    /// Steps that will not run again: succeeded, or failed under the `continue` policy.
    var finished: [String: StepOutcome] = [:]
    /// Steps that began and have not ended, oldest first: they were interrupted.
    var open: [InterruptedStep] = []
    /// Steps that ended since the last `migrated` entry, with the version they ran under.
    var endedSinceMigrated: [String: RunningVersion] = [:]
    /// Failed steps, in the order they failed.
    var failures: [FailedStep] = []
    /// Steps a downgrade undid and that have not run again since.
    var undone: Set<String> = []
    /// The latest snapshot taken before each step, by step name.
    var snapshots: [String: String] = [:]
    /// Undos that began and have not ended, oldest first: a downgrade was interrupted.
    var openUndos: [(name: String, method: UndoMethod, archive: String?)] = []

    init() {}

    /// Folds `entries`; with `historyOnly`, skips the migration state (the tracker's case).
    init(_ entries: [LedgerEntry], historyOnly: Bool = false) {
        if historyOnly {
            for entry in entries {
                switch entry.record {
                case .history(let event): events.append(event)
                case .system(let event): systemEvents.append(event)
                default: break
                }
            }
        } else {
            for entry in entries { apply(entry.record) }
        }
    }

    mutating func apply(_ record: LedgerRecord) {
        switch record {
        case .history(let event):
            events.append(event)
        case .system(let event):
            systemEvents.append(event)
        case .stepBegan(let name, let running, let date):
            open.removeAll { $0.name == name }
            open.append(InterruptedStep(name: name, startedAt: date, running: running))
        case .stepEnded(let name, let running, let date, let outcome):
            if let index = open.lastIndex(where: { $0.name == name }) { open.remove(at: index) }
            endedSinceMigrated[name] = running
            switch outcome {
            case .succeeded:
                finished[name] = outcome
                undone.remove(name)
            case .failed(let message):
                finished[name] = outcome
                failures.append(FailedStep(name: name, message: message, date: date, isRetried: false))
            case .abandoned(let message):
                failures.append(FailedStep(name: name, message: message, date: date, isRetried: true))
            }
        case .initialized(let floor, let isBaseline, _):
            self.floor = floor
            self.isBaseline = isBaseline
            endedSinceMigrated = [:]
        case .migrated(let running, _):
            lastMigrated = running
            endedSinceMigrated = [:]
        case .reset:
            floor = nil
            isBaseline = false
            lastMigrated = nil
            finished = [:]
            open = []
            endedSinceMigrated = [:]
            failures = []
            undone = []
            snapshots = [:]
            openUndos = []
        case .snapshot(let name, let path, _):
            snapshots[name] = path
        case .undoBegan(let name, let method, let archive, _):
            openUndos.removeAll { $0.name == name }
            openUndos.append((name, method, archive))
        case .undoFailed(let name, _, _):
            openUndos.removeAll { $0.name == name }
        case .undone(let name, _, _, _):
            openUndos.removeAll { $0.name == name }
            finished[name] = nil
            undone.insert(name)
        case .unknown:
            break
        }
    }

    /// The latest version seen by the tracker in this scope.
    var latestRunning: RunningVersion? { events.last?.running }
}
