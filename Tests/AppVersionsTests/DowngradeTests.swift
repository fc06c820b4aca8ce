import AppVersions
import Foundation
import Testing

@Suite("Downgrades")
struct DowngradeTests {
    let clock = TestClock()
    let journal = Journal()

    func running(_ version: Version) -> RunningVersion { RunningVersion(version: version, build: "b1") }

    func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    // MARK: Floors and plans

    /// a@1.1 (readable by 1.0), b@2.0 (no floor given, no revert), c@3.0 (readable by 2.0, with revert).
    func threeSteps(_ store: any LedgerStore) -> Migrator {
        var migrator = Migrator(store: store, now: clock.reader)
        migrator.baseline = { _ in "1.0.0" }
        migrator.register("a", at: "1.1.0", readerFloor: "1.0.0") { [journal] _ in journal.append("a") }
        migrator.register("b", at: "2.0.0") { [journal] _ in journal.append("b") }
        migrator.register("c", at: "3.0.0", readerFloor: "2.0.0", revert: { [journal] _ in journal.append("revert c") }) {
            [journal] _ in journal.append("c")
        }
        return migrator
    }

    @Test func readerFloorIsTheHighestFloorOfTheAppliedSteps() throws {
        let migrator = threeSteps(InMemoryLedgerStore())
        try migrator.run(for: running("1.1.0"))
        #expect(try migrator.readerFloor() == "1.0.0")
        try migrator.run(for: running("3.0.0"))
        #expect(try migrator.readerFloor() == "2.0.0")
    }

    @Test func planListsStepsAboveTheTargetNewestFirst() throws {
        let migrator = threeSteps(InMemoryLedgerStore())
        try migrator.run(for: running("3.0.0"))
        let plan = try migrator.downgradePlan(to: "1.5.0")
        #expect(plan.steps.map(\.name) == ["c", "b"])
        #expect(plan.steps.map(\.action) == [.revert, .impossible])
        #expect(!plan.isSafe && !plan.isPossible)
        #expect(try migrator.downgradePlan(to: "2.0.0").isSafe)
        #expect(try migrator.downgradePlan(to: "2.5.0").isSafe)
    }

    // MARK: Reverts

    @Test func revertsRunNewestFirstAndTheStepsRunAgainOnUpgrade() throws {
        var migrator = Migrator(store: InMemoryLedgerStore(), now: clock.reader)
        migrator.baseline = { _ in "1.0.0" }
        for (name, version) in [("x", "2.0.0"), ("y", "2.1.0")] as [(String, Version)] {
            migrator.register(name, at: version, revert: { [journal] _ in journal.append("revert " + name) }) {
                [journal] _ in journal.append(name)
            }
        }
        try migrator.run(for: running("2.1.0"))
        let report = try migrator.downgrade(to: "1.0.0")
        #expect(journal.entries == ["x", "y", "revert y", "revert x"])
        #expect(report.actions.map(\.name) == ["y", "x"])
        #expect(report.actions.allSatisfy { $0.method == .revert && !$0.isRecovery })
        #expect(report.readerFloorBefore == "2.1.0" && report.readerFloorAfter == nil)
        #expect(try migrator.downgradePlan(to: "1.0.0").isSafe)

        try migrator.run(for: running("1.0.0"))
        let upgrade = try migrator.run(for: running("2.1.0"))
        #expect(upgrade.ran == ["x", "y"])
        #expect(try migrator.readerFloor() == "2.1.0")
    }

    @Test func aStepReadableByTheTargetIsLeftAlone() throws {
        let migrator = threeSteps(InMemoryLedgerStore())
        try migrator.run(for: running("3.0.0"))
        let report = try migrator.downgrade(to: "2.0.0")
        #expect(report.actions.isEmpty)
        #expect(!journal.entries.contains("revert c"))
    }

    @Test func aFailingRevertThrowsDowngradeFailedAndKeepsTheStepApplied() throws {
        var migrator = Migrator(store: InMemoryLedgerStore(), now: clock.reader)
        migrator.baseline = { _ in "1.0.0" }
        migrator.register("x", at: "2.0.0", revert: { _ in throw TestFailure("disk on fire") }) { _ in }
        try migrator.run(for: running("2.0.0"))
        #expect {
            try migrator.downgrade(to: "1.0.0")
        } throws: { ($0 as? AppVersionsError)?.code == .downgradeFailed }
        #expect(try migrator.readerFloor() == "2.0.0")
        // A thrown error is not a crash: the next start runs, without retrying the revert.
        let next = try migrator.run(for: running("2.0.0"))
        #expect(next.recoveredUndos.isEmpty && next.ran.isEmpty)
    }

    // MARK: Snapshots, refusal, force

    struct Files {
        let root = TemporaryDirectory()
        var data: String { root.file("data") }
        var ledger: String { root.file("ledger") }
        var notes: String { data + "/notes.txt" }
        init() {
            try? FileManager.default.createDirectory(atPath: root.file("data"), withIntermediateDirectories: true)
        }
    }

    /// "v2"@2.0 rewrites notes.txt with no revert (snapshot restore); "v3"@3.0 with a revert.
    func notesMigrator(_ files: Files, snapshots: Bool = true) -> Migrator {
        var migrator = Migrator(store: FileLedgerStore(directory: files.ledger), now: clock.reader)
        migrator.baseline = { _ in "1.0.0" }
        if snapshots { migrator.dataDirectory = files.data }
        let notes = files.notes
        migrator.register("v2", at: "2.0.0") { _ in try "v2".write(toFile: notes, atomically: true, encoding: .utf8) }
        migrator.register("v3", at: "3.0.0", revert: { _ in try "v2".write(toFile: notes, atomically: true, encoding: .utf8) }) { _ in
            try "v3".write(toFile: notes, atomically: true, encoding: .utf8)
        }
        return migrator
    }

    @Test func restoresTheSnapshotAndArchivesTheCurrentData() throws {
        let files = Files()
        defer { files.root.remove() }
        try "v1".write(toFile: files.notes, atomically: true, encoding: .utf8)
        let migrator = notesMigrator(files)
        try migrator.run(for: running("3.0.0"))
        #expect(read(files.notes) == "v3")

        let plan = try migrator.downgradePlan(to: "1.0.0")
        #expect(plan.steps.map(\.name) == ["v3", "v2"])
        #expect(plan.steps.first?.action == .undoneByRestore(of: "v2"))

        let report = try migrator.downgrade(to: "1.0.0")
        #expect(read(files.notes) == "v1")
        #expect(report.actions.map(\.name) == ["v3", "v2"])
        #expect(report.actions.allSatisfy { $0.method == .restore })
        let archive = try #require(report.actions.last?.archive)
        #expect(read(archive + "/notes.txt") == "v3")
        #expect(try migrator.downgradePlan(to: "1.0.0").isSafe)

        let upgrade = try migrator.run(for: running("3.0.0"))
        #expect(upgrade.ran == ["v2", "v3"])
        #expect(read(files.notes) == "v3")
    }

    @Test func revertsWhatItCanBeforeARestoreIsNeeded() throws {
        let files = Files()
        defer { files.root.remove() }
        try "v1".write(toFile: files.notes, atomically: true, encoding: .utf8)
        let migrator = notesMigrator(files)
        try migrator.run(for: running("3.0.0"))
        let report = try migrator.downgrade(to: "2.0.0")
        #expect(report.actions.map(\.method) == [.revert])
        #expect(read(files.notes) == "v2")
    }

    @Test func refusesWhenAStepCanNeitherBeRevertedNorRestored() throws {
        let files = Files()
        defer { files.root.remove() }
        try "v1".write(toFile: files.notes, atomically: true, encoding: .utf8)
        let migrator = notesMigrator(files, snapshots: false)
        try migrator.run(for: running("3.0.0"))
        var caught: AppVersionsError?
        do { try migrator.downgrade(to: "1.0.0") } catch { caught = error as? AppVersionsError }
        let error = try #require(caught)
        #expect(error.code == .downgradeRefused)
        #expect(error.subject == "v2")
        #expect(error.description.contains("step \"v2\""))
        #expect(error.description.contains("force"))
        // Nothing changed: the revertible step was not reverted either.
        #expect(read(files.notes) == "v3")
        #expect(try migrator.readerFloor() == "3.0.0")
    }

    @Test func forceArchivesTheDataAndProceeds() throws {
        let files = Files()
        defer { files.root.remove() }
        try "v1".write(toFile: files.notes, atomically: true, encoding: .utf8)
        var migrator = notesMigrator(files, snapshots: false)
        try migrator.run(for: running("3.0.0"))
        migrator.dataDirectory = files.data  // Set after the steps ran, so there are no snapshots.
        let report = try migrator.downgrade(to: "1.0.0", force: true)
        #expect(report.actions.map(\.method) == [.revert, .archive])
        let archive = try #require(report.actions.last?.archive)
        #expect(read(archive + "/notes.txt") == "v2")
        #expect(read(files.notes) == nil)
        #expect(FileManager.default.fileExists(atPath: files.data))
        #expect(try migrator.readerFloor() == nil)
    }

    @Test func snapshotsLeaveOutALedgerInsideTheDataDirectory() throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let data = root.file("data")
        try FileManager.default.createDirectory(atPath: data + "/sub", withIntermediateDirectories: true)
        try "deep".write(toFile: data + "/sub/file", atomically: true, encoding: .utf8)
        var migrator = Migrator(store: FileLedgerStore(directory: data + "/versions"), now: clock.reader)
        migrator.baseline = { _ in "1.0.0" }
        migrator.dataDirectory = data
        migrator.snapshotDirectory = root.file("snaps")
        migrator.register("s", at: "2.0.0") { _ in }
        try migrator.run(for: running("2.0.0"))
        let plan = try migrator.downgradePlan(to: "1.0.0")
        guard case .restoreSnapshot(let snapshot) = plan.steps.first?.action else {
            Issue.record("expected a snapshot restore, got \(plan.steps)")
            return
        }
        #expect(read(snapshot + "/sub/file") == "deep")
        #expect(!FileManager.default.fileExists(atPath: snapshot + "/versions"))
    }

    // MARK: The journal

    @Test func undoEntriesRoundTripThroughTheirLines() throws {
        for line in ["undo-began\t1.5\tx\trestore\t/a/b", "undone\t2.5\tx\trevert\t\\-", "snapshot\t3.5\tx\t/s/1"] {
            #expect(try LedgerEntry(line: line).line == line)
        }
        #expect(throws: AppVersionsError.self) { try LedgerEntry(line: "undone\t2.5\tx\tteleport\t\\-") }
    }

    @Test func anInterruptedRevertIsRunAgainByTheNextRun() throws {
        let store = InMemoryLedgerStore()
        var migrator = Migrator(store: store, now: clock.reader)
        migrator.baseline = { _ in "1.0.0" }
        migrator.register("x", at: "2.0.0", revert: { [journal] context in
            journal.append("revert x retry=\(context.isRetryAfterInterruption)")
        }) { _ in }
        try migrator.run(for: running("2.0.0"))
        // What a downgrade killed inside the revert leaves behind.
        try store.append([LedgerEntry(line: "undo-began\t700000100.0\tx\trevert\t\\-")], to: .app)

        let report = try migrator.run(for: running("1.0.0"))
        #expect(report.recoveredUndos.map(\.name) == ["x"])
        #expect(report.recoveredUndos.allSatisfy { $0.method == .revert && $0.isRecovery && $0.archive == nil })
        #expect(journal.entries == ["revert x retry=true"])
        #expect(try migrator.readerFloor() == nil)
        #expect(try migrator.run(for: running("2.0.0")).ran == ["x"])
    }

    @Test func anInterruptedRestoreIsNotMarkedDoneWithoutItsDataDirectory() throws {
        let store = InMemoryLedgerStore()
        var migrator = Migrator(store: store, now: clock.reader)
        migrator.baseline = { _ in "1.0.0" }
        migrator.register("x", at: "2.0.0") { _ in }
        try migrator.run(for: running("2.0.0"))
        try store.append([LedgerEntry(line: "undo-began\t700000100.0\tx\trestore\t/nowhere/archive")], to: .app)
        #expect {
            try migrator.downgradePlan(to: "1.0.0")
        } throws: { ($0 as? AppVersionsError)?.code == .downgradeFailed }
        #expect(try migrator.readerFloor() == "2.0.0")
    }
    /// Killed between the two renames of a restore: the data set is in the archive, the
    /// staged copy beside the data directory, and the app, starting again, has already
    /// made itself an empty data directory. The restore must still finish.
    @Test func aRestoreKilledBetweenItsRenamesFinishesDespiteAFreshDataDirectory() throws {
        let files = Files()
        defer { files.root.remove() }
        try "v1".write(toFile: files.notes, atomically: true, encoding: .utf8)
        let migrator = notesMigrator(files)
        try migrator.run(for: running("2.0.0"))
        let snapshots = files.ledger + "/snapshots/app"
        let snapshot = try #require(try FileManager.default.contentsOfDirectory(atPath: snapshots).first)

        let archive = files.root.file("archive-of-v2")
        try FileManager.default.copyItem(atPath: snapshots + "/" + snapshot, toPath: files.data + ".appversions-restoring")
        try FileManager.default.moveItem(atPath: files.data, toPath: archive)
        try FileManager.default.createDirectory(atPath: files.data, withIntermediateDirectories: true)
        try FileLedgerStore(directory: files.ledger).append([LedgerEntry(line: "undo-began\t700000100.0\tv2\trestore\t\(archive)")], to: .app)

        #expect(try migrator.downgradePlan(to: "1.0.0").isSafe)
        #expect(read(files.notes) == "v1")
        #expect(read(archive + "/notes.txt") == "v2")
        #expect(!FileManager.default.fileExists(atPath: files.data + ".appversions-restoring"))
    }
    /// A step undone by a downgrade runs again on the next upgrade with a fresh snapshot;
    /// the one before it can never be restored again, so it is deleted.
    @Test func aStepThatRunsAgainKeepsOnlyItsNewestSnapshot() throws {
        let files = Files()
        defer { files.root.remove() }
        try "v1".write(toFile: files.notes, atomically: true, encoding: .utf8)
        let migrator = notesMigrator(files)
        let snapshots = files.ledger + "/snapshots/app"
        func v2Snapshots() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: snapshots)) ?? []).filter { $0.hasSuffix("-before-v2") }
        }
        try migrator.run(for: running("2.0.0"))
        let first = v2Snapshots()
        #expect(first.count == 1)
        let report = try migrator.downgrade(to: "1.0.0")
        #expect(report.actions.map(\.method) == [.restore])
        try migrator.run(for: running("2.0.0"))
        let second = v2Snapshots()
        #expect(second.count == 1 && second != first)
        #expect(read(files.notes) == "v2")
        let archive = try #require(report.actions.first?.archive)
        #expect(FileManager.default.fileExists(atPath: archive), "archives are never deleted")
    }
}
