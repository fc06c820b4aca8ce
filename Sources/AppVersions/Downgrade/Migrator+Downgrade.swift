#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Migrator {
    // MARK: Reader floors and plans

    /// The oldest version that can read `scope`'s data as it is now: the highest
    /// ``MigrationStep/readerFloor`` (or version, when it has none) of the registered
    /// version steps applied to it. Nil when no registered version step applies.
    ///
    /// Steps covered by the scope's install or baseline version count as applied.
    ///
    /// - Throws: ``AppVersionsError`` if the ledger cannot be read.
    public func readerFloor(scope: Scope = .app) throws -> Version? {
        Self.floor(of: applied(in: try store.ledger(for: scope)))
    }

    /// Works out which applied steps ``downgrade(to:force:scope:)`` must undo so that
    /// `target` can read `scope`'s data, newest first, and how; changes nothing.
    ///
    /// Finishes first any revert or restore that an interrupted downgrade left, so the
    /// plan describes the data as it is (hence it may write, under the store's lock).
    ///
    /// - Throws: ``AppVersionsError`` if the ledger cannot be read or an interrupted
    ///   undo cannot be finished.
    public func downgradePlan(to target: Version, scope: Scope = .app) throws -> DowngradePlan {
        try store.exclusively(scope) {
            _ = try recoverInterruptedUndos(scope: scope, running: RunningVersion(version: target))
            return plan(to: target, scope: scope, ledger: try store.ledger(for: scope))
        }
    }

    /// Undoes the applied steps whose reader floor is above `target`, newest first, so
    /// that `target` can read `scope`'s data; call it from the newer release before
    /// handing over to the older one.
    ///
    /// Under the store's exclusive lock, each step is undone by its
    /// ``MigrationStep/revert`` if it has one; otherwise by restoring the snapshot taken
    /// before it (the current data set is moved to an archive, never deleted). Each undo
    /// is journalled in the ledger before it starts and recorded when it ends, so a
    /// crash leaves it to be finished at the next `run`, `downgradePlan` or `downgrade`.
    /// An undone step is no longer applied: upgrading again runs it as usual.
    ///
    /// - Parameter force: Proceed past a step with neither revert nor snapshot by moving
    ///   the data directory to an archive and leaving it empty.
    /// - Returns: What was undone, and what an interrupted earlier downgrade left and
    ///   this one finished.
    /// - Throws: ``AppVersionsError`` with ``AppVersionsError/Code/downgradeRefused``
    ///   (nothing changed) when a step cannot be undone and `force` is false;
    ///   ``AppVersionsError/Code/downgradeFailed`` when a revert throws or a restore
    ///   fails (steps undone before it stay undone); or a storage error.
    @discardableResult
    public func downgrade(to target: Version, force: Bool = false, scope: Scope = .app) throws -> DowngradeReport {
        try store.exclusively(scope) {
            let running = RunningVersion(version: target)
            let recovered = try recoverInterruptedUndos(scope: scope, running: running)
            let ledger = try store.ledger(for: scope)
            let plan = plan(to: target, scope: scope, ledger: ledger)
            var report = DowngradeReport(
                scope: scope, target: target,
                readerFloorBefore: plan.readerFloor, readerFloorAfter: plan.readerFloor,
                recovered: recovered, actions: []
            )
            if !force, let blocked = plan.steps.first(where: { $0.action == .impossible }) {
                throw AppVersionsError(
                    .downgradeRefused,
                    "Cannot downgrade scope \"\(scope.name)\" to \(target): step \"\(blocked.name)\" (\(blocked.version)) left data that only \(blocked.readerFloor) or later can read, and it has no revert and no snapshot; pass force to archive the data directory and proceed with it empty.",
                    subject: blocked.name
                )
            }
            var covered: [String] = []
            for step in plan.steps {
                switch step.action {
                case .undoneByRestore:
                    covered.append(step.name)
                case .revert:
                    try store.append(records: [.undoBegan(name: step.name, method: .revert, archive: nil, date: now())], to: scope)
                    try runRevert(step.name, scope: scope, running: running, previous: ledger.lastMigrated, isRetry: false)
                    // (A revert that throws closes its journal entry in runRevert.)
                    try store.append(records: [.undone(name: step.name, method: .revert, archive: nil, date: now())], to: scope)
                    report.actions.append(DowngradeAction(name: step.name, method: .revert, archive: nil, isRecovery: false))
                case .restoreSnapshot(let snapshot):
                    let archive = archivePath(scope: scope, step: step.name)
                    // The covered steps are journalled with the restore, so a crash leaves
                    // all of them to be recorded once the restore is finished.
                    var begun = covered.map { LedgerRecord.undoBegan(name: $0, method: .restore, archive: nil, date: now()) }
                    begun.append(.undoBegan(name: step.name, method: .restore, archive: archive, date: now()))
                    try store.append(records: begun, to: scope)
                    try restore(from: snapshot, archive: archive, scope: scope)
                    let names = covered + [step.name]
                    try store.append(records: names.map {
                        .undone(name: $0, method: .restore, archive: $0 == step.name ? archive : nil, date: now())
                    }, to: scope)
                    report.actions += names.map {
                        DowngradeAction(name: $0, method: .restore, archive: $0 == step.name ? archive : nil, isRecovery: false)
                    }
                    covered = []
                case .impossible:
                    var archive: String? = nil
                    if let data = dataDirectory(for: scope) {
                        archive = archivePath(scope: scope, step: step.name)
                        try store.append(records: [.undoBegan(name: step.name, method: .archive, archive: archive, date: now())], to: scope)
                        try DataSnapshots.archive(data, to: archive!)
                    }
                    try store.append(records: [.undone(name: step.name, method: .archive, archive: archive, date: now())], to: scope)
                    report.actions.append(DowngradeAction(name: step.name, method: .archive, archive: archive, isRecovery: false))
                }
            }
            report.readerFloorAfter = Self.floor(of: applied(in: try store.ledger(for: scope)))
            return report
        }
    }

    // MARK: Recovery

    /// Finishes the undos an interrupted downgrade left open: restores and archives are
    /// completed (they are repeatable), reverts run again. Call with the lock held.
    func recoverInterruptedUndos(scope: Scope, running: RunningVersion) throws -> [DowngradeAction] {
        let ledger = try store.ledger(for: scope)
        guard !ledger.openUndos.isEmpty else { return [] }
        var done: [DowngradeAction] = []
        // Restores first: the steps they cover are recorded once the data is restored.
        for undo in ledger.openUndos where undo.method != .revert {
            // A restore's covered steps carry no archive: the restore of the older step does the work.
            guard let archive = undo.archive else { continue }
            guard let data = dataDirectory(for: scope) else {
                throw AppVersionsError(
                    .downgradeFailed,
                    "An interrupted downgrade was undoing step \"\(undo.name)\" in scope \"\(scope.name)\" by \(undo.method), but no data directory is set; set the migrator's data directory to finish it.",
                    subject: undo.name
                )
            }
            if undo.method == .restore {
                guard let snapshot = ledger.snapshots[undo.name], DataSnapshots.exists(snapshot) else {
                    throw AppVersionsError(
                        .downgradeFailed,
                        "An interrupted downgrade was restoring the snapshot taken before step \"\(undo.name)\", but the snapshot is gone; restore \(data) by hand from \(archive) or a backup.",
                        path: archive, subject: undo.name
                    )
                }
                try restore(from: snapshot, archive: archive, scope: scope)
            } else {
                try DataSnapshots.archive(data, to: archive)
            }
        }
        for undo in ledger.openUndos.reversed() where undo.method == .revert {
            try runRevert(undo.name, scope: scope, running: running, previous: ledger.lastMigrated, isRetry: true)
            try store.append(records: [.undone(name: undo.name, method: .revert, archive: nil, date: now())], to: scope)
            done.append(DowngradeAction(name: undo.name, method: .revert, archive: nil, isRecovery: true))
        }
        let rest = ledger.openUndos.filter { $0.method != .revert }
        if !rest.isEmpty {
            try store.append(records: rest.map {
                .undone(name: $0.name, method: $0.method, archive: $0.archive, date: now())
            }, to: scope)
            done += rest.map { DowngradeAction(name: $0.name, method: $0.method, archive: $0.archive, isRecovery: true) }
        }
        return done
    }

    // MARK: Helpers

    /// The registered version steps applied to the ledger's data, oldest first.
    func applied(in ledger: Ledger) -> [(index: Int, version: Version, floor: Version)] {
        var result: [(index: Int, version: Version, floor: Version)] = []
        for index in steps.indices {
            let step = steps[index]
            guard let version = step.version, !ledger.undone.contains(step.name) else { continue }
            let isApplied = ledger.finished[step.name] == .succeeded || (ledger.floor.map { version <= $0 } ?? false)
            if isApplied { result.append((index, version, step.readerFloor ?? version)) }
        }
        result.sort { $0.version < $1.version || ($0.version == $1.version && $0.index < $1.index) }
        return result
    }

    static func floor(of applied: [(index: Int, version: Version, floor: Version)]) -> Version? {
        applied.map(\.floor).max()
    }

    func plan(to target: Version, scope: Scope, ledger: Ledger) -> DowngradePlan {
        let applied = applied(in: ledger)
        func describe(_ entry: (index: Int, version: Version, floor: Version), _ action: DowngradePlan.Action) -> DowngradePlan.Step {
            DowngradePlan.Step(name: steps[entry.index].name, version: entry.version, readerFloor: entry.floor, action: action)
        }
        let hasData = dataDirectory(for: scope) != nil
        func snapshot(_ name: String) -> String? {
            guard hasData, let path = ledger.snapshots[name], DataSnapshots.exists(path) else { return nil }
            return path
        }
        let needed = applied.indices.filter { applied[$0].floor > target }
        // The oldest needed step that must be restored from its snapshot: restoring it
        // also undoes every step applied after it.
        let restored = needed.first { steps[applied[$0].index].revert == nil && snapshot(steps[applied[$0].index].name) != nil }
        var result: [DowngradePlan.Step] = []
        for position in applied.indices.reversed() {
            let entry = applied[position]
            let name = steps[entry.index].name
            if let restored, position > restored {
                result.append(describe(entry, .undoneByRestore(of: steps[applied[restored].index].name)))
            } else if position == restored {
                result.append(describe(entry, .restoreSnapshot(snapshot(name)!)))
            } else if needed.contains(position) {
                result.append(describe(entry, steps[entry.index].revert != nil ? .revert : .impossible))
            }
        }
        return DowngradePlan(scope: scope, target: target, readerFloor: Self.floor(of: applied), steps: result)
    }

    func dataDirectory(for scope: Scope) -> String? {
        scope == .app ? dataDirectory : dataDirectoryForScope?(scope)
    }

    /// Where snapshots and archives live.
    var snapshotArea: String? {
        if let snapshotDirectory { return snapshotDirectory }
        if let fileStore = store as? FileLedgerStore { return fileStore.directory + "/snapshots" }
        return dataDirectory.map { DataSnapshots.normalized($0) + ".appversions" }
    }

    func stamp() -> String {
        let millis = UInt64(max(0, now().timeIntervalSince1970 * 1000))
        return "\(millis)-\(UInt32.random(in: 0...UInt32.max))"
    }

    func archivePath(scope: Scope, step: String) -> String {
        let area = snapshotArea ?? "."
        return area + "/archive/" + DataSnapshots.component(scope.name) + "-" + stamp() + "-before-undo-of-" + DataSnapshots.component(step)
    }

    /// Snapshots the scope's data directory before `step`, if it has one, copying or
    /// hard-linking each file as ``snapshotMethod`` says; returns the path.
    func takeSnapshot(before step: String, scope: Scope) throws -> String? {
        guard let data = dataDirectory(for: scope), let area = snapshotArea else { return nil }
        let folder = area + "/" + DataSnapshots.component(scope.name)
        // A snapshot the process died while copying is never recorded; drop its remains.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasSuffix(".partial") {
            try? DataSnapshots.removeTree(folder + "/" + name)
        }
        let path = folder + "/" + stamp() + "-before-" + DataSnapshots.component(step)
        try DataSnapshots.snapshot(data, at: path, excluding: ledgerDirectory, method: snapshotMethod)
        return path
    }

    var ledgerDirectory: String? {
        (store as? FileLedgerStore)?.directory
    }

    func restore(from snapshot: String, archive: String, scope: Scope) throws {
        guard let data = dataDirectory(for: scope) else { return }
        if let ledgerDirectory, (DataSnapshots.normalized(ledgerDirectory) + "/").hasPrefix(DataSnapshots.normalized(data) + "/") {
            throw AppVersionsError(
                .downgradeFailed,
                "Cannot restore a snapshot over \(data) because the ledger directory \(ledgerDirectory) is inside it; keep the ledger outside the data directory to use snapshot restores.",
                path: data
            )
        }
        try DataSnapshots.restore(data, from: snapshot, archive: archive)
    }

    func runRevert(_ name: String, scope: Scope, running: RunningVersion, previous: RunningVersion?, isRetry: Bool) throws {
        guard let revert = steps.first(where: { $0.name == name })?.revert else {
            throw AppVersionsError(
                .downgradeFailed,
                "An interrupted downgrade was reverting step \"\(name)\", but this release registers no revert for it; start the release that began the downgrade to finish it.",
                subject: name
            )
        }
        let context = MigrationContext(
            step: name, scope: scope, running: running, previous: previous,
            isFirstInstall: false, isRetryAfterInterruption: isRetry
        )
        do {
            try revert(context)
        } catch {
            // A thrown error, unlike a crash, is the revert's own verdict: it must leave the
            // data readable by the release that runs it, as a failing step must. Close the
            // journal entry, so that the next start runs rather than retrying it.
            try? store.append(records: [.undoFailed(name: name, method: .revert, date: now())], to: scope)
            throw AppVersionsError(
                .downgradeFailed,
                "The revert of migration step \"\(name)\" failed in scope \"\(scope.name)\" with \(error); fix the cause and run the downgrade again (it resumes where it stopped).",
                subject: name, underlying: error
            )
        }
    }
}
