import AppVersions
import Foundation
import Testing

/// `Migrator.plan(for:)`: what `run` would do, with the reader floor after each step, worked
/// out without running, locking or writing anything (a release's planning run asks it while
/// another release serves the same data).
@Suite("Migration plan")
struct MigrationPlanTests {
    let clock = TestClock()

    func running(_ version: Version, _ build: String = "b1") -> RunningVersion {
        RunningVersion(version: version, build: build)
    }

    func step(_ name: String, _ version: Version, floor: Version?) -> MigrationPlan.Step {
        MigrationPlan.Step(name: name, trigger: .version(version), readerFloor: floor)
    }

    /// The sample's shape: a first-install step, an expand step older builds read, a
    /// contract step only its own version reads, and a hook.
    func migrator(store: any LedgerStore, ran: Journal? = nil, data: String? = nil) -> Migrator {
        var migrator = Migrator(store: store, now: clock.reader)
        migrator.dataDirectory = data
        migrator.registerFirstInstall("create-store") { _ in ran?.append("create-store") }
        migrator.register("notes-v2", at: "1.2.0") { _ in ran?.append("notes-v2") }
        migrator.register("tags-file", at: "1.1.5", readerFloor: "1.0.0") { _ in ran?.append("tags-file") }
        migrator.registerEveryVersionChange("clear-caches") { _ in ran?.append("clear-caches") }
        return migrator
    }

    @Test func pendingStepsComeInRunOrderWithTheFloorEachLeaves() throws {
        let store = InMemoryLedgerStore()
        var old = Migrator(store: store, now: clock.reader)
        old.registerFirstInstall("create-store") { _ in }
        try old.run(for: running("1.1.0"))

        let ran = Journal()
        let migrator = migrator(store: store, ran: ran)
        let plan = try migrator.plan(for: running("1.2.0"))
        #expect(plan.pending == [
            step("tags-file", "1.1.5", floor: "1.0.0"),
            step("notes-v2", "1.2.0", floor: "1.2.0"),
            MigrationPlan.Step(name: "clear-caches", trigger: .everyVersionChange, readerFloor: nil),
        ])
        #expect(plan.pending.map(\.name) == plan.steps)
        #expect(ran.entries.isEmpty, "planning runs no step")
        // What run then does is what the plan said.
        #expect(try migrator.run(for: running("1.2.0")).ran == plan.steps)
        #expect(try migrator.plan(for: running("1.2.0")).pending.isEmpty)
    }

    @Test func aFirstInstallCreatesDataAsReadableAsTheStepsItCountsAsApplied() throws {
        let store = InMemoryLedgerStore()
        let plan = try migrator(store: store).plan(for: running("1.2.0"))
        #expect(plan.isFirstInstall)
        #expect(plan.pending == [MigrationPlan.Step(name: "create-store", trigger: .firstInstall, readerFloor: "1.2.0")])
        // Below notes-v2, only the expand step counts: its floor is the data's.
        #expect(try migrator(store: store).plan(for: running("1.1.9")).pending.first?.readerFloor == "1.0.0")
        // No version step at or below the running version: the running version, conservatively.
        #expect(try migrator(store: store).plan(for: running("1.0.0")).pending.first?.readerFloor == "1.0.0")
        var bare = Migrator(store: store, now: clock.reader)
        bare.registerFirstInstall("create-store") { _ in }
        #expect(try bare.plan(for: running("3.0.0")).pending.first?.readerFloor == "3.0.0")
    }

    @Test func aLegacyInstallPlansTheStepsAboveItsBaseline() throws {
        var migrator = migrator(store: InMemoryLedgerStore())
        migrator.baseline = { _ in "1.1.0" }
        let plan = try migrator.plan(for: running("1.2.0"))
        #expect(plan.baseline == "1.1.0" && !plan.isFirstInstall)
        #expect(plan.pending.map(\.name) == ["tags-file", "notes-v2", "clear-caches"])
    }

    @Test func anUpToDateScopeHasNothingPendingAndAStepAboveTheRunningVersionNeverIs() throws {
        let store = InMemoryLedgerStore()
        let migrator = migrator(store: store)
        try migrator.run(for: running("1.1.0"))
        #expect(try migrator.plan(for: running("1.1.0")).pending.isEmpty)
        // A new build of the same version: only the hook.
        #expect(try migrator.plan(for: running("1.1.0", "b2")).pending.map(\.name) == ["clear-caches"])
        #expect(try migrator.plan(for: running("1.1.9")).pending.map(\.name) == ["tags-file", "clear-caches"])
    }

    @Test func planningWritesNothingTakesNoSnapshotAndNoLock() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.file("data"), ledger = directory.file("data.versions")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let store = FileLedgerStore(directory: ledger)
        let old = migrator(store: store, data: data)
        try old.run(for: running("1.1.0"))
        try directory.write("old notes\n", to: "data/notes.txt")
        let before = try Self.tree(directory.path)

        let ran = Journal()
        let plan = try migrator(store: FileLedgerStore(directory: ledger), ran: ran, data: data).plan(for: running("1.2.0"))
        #expect(plan.pending.map(\.name) == ["tags-file", "notes-v2", "clear-caches"])
        #expect(ran.entries.isEmpty)
        #expect(try Self.tree(directory.path) == before, "no ledger entry, no snapshot, no lock file")

        // A scope that was never written: nothing is created either.
        let fresh = TemporaryDirectory()
        defer { fresh.remove() }
        _ = try migrator(store: FileLedgerStore(directory: fresh.file("data.versions")), data: fresh.file("data")).plan(for: running("1.2.0"))
        #expect(try Self.tree(fresh.path).isEmpty)
    }

    @Test func anUndoAnInterruptedDowngradeLeftCountsAsFinished() throws {
        let store = InMemoryLedgerStore()
        var migrator = Migrator(store: store, now: clock.reader)
        migrator.register("notes-v2", at: "1.2.0", revert: { _ in }) { _ in }
        migrator.baseline = { _ in "1.1.0" }
        try migrator.run(for: running("1.2.0"))
        try migrator.downgrade(to: "1.1.0")
        // The process died after the revert, before its end was recorded.
        let torn = InMemoryLedgerStore()
        torn.append(store.entries(in: .app).filter { !$0.line.hasPrefix("undone\t") }, to: .app)
        var interrupted = Migrator(store: torn, now: clock.reader)
        interrupted.register("notes-v2", at: "1.2.0", revert: { _ in }) { _ in }
        // Back on 1.2.0, run would finish the revert, then run the step again.
        #expect(try interrupted.plan(for: running("1.2.0", "b2")).pending.map(\.name) == ["notes-v2"])
        #expect(try interrupted.run(for: running("1.2.0", "b2")).ran == ["notes-v2"])
    }

    /// Every file and directory under `path`, with its contents.
    static func tree(_ path: String) throws -> [String: String] {
        var result: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let relative = enumerator?.nextObject() as? String {
            let full = path + "/" + relative
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory)
            result[relative] = isDirectory.boolValue ? "(directory)" : try String(contentsOfFile: full, encoding: .isoLatin1)
        }
        return result
    }
}
