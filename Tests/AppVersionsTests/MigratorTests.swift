import AppVersions
import Foundation
import Testing

@Suite("Migrator")
struct MigratorTests {
    let store = InMemoryLedgerStore()
    let clock = TestClock()
    let journal = Journal()

    func running(_ version: Version, _ build: String = "b1") -> RunningVersion {
        RunningVersion(version: version, build: build)
    }

    /// A migrator whose steps write their names to the journal.
    func migrator(_ versions: [(String, Version)] = [], baseline: Version? = nil) -> Migrator {
        var migrator = Migrator(store: store, now: clock.reader)
        if let baseline { migrator.baseline = { _ in baseline } }
        for (name, version) in versions {
            migrator.register(name, at: version) { [journal] _ in journal.append(name) }
        }
        return migrator
    }

    // MARK: Order, once, catch-up, ceiling

    @Test func runsStepsInVersionOrderWhateverTheRegistrationOrder() throws {
        let migrator = migrator([
            ("c-1.10", "1.10.0"), ("a-1.2", "1.2.0"), ("rc", "1.10.0-rc.1"), ("b-1.2-second", "1.2.0"), ("d-1.9", "1.9.0"),
        ], baseline: "1.0.0")
        let report = try migrator.run(for: running("2.0.0"))
        #expect(journal.entries == ["a-1.2", "b-1.2-second", "d-1.9", "rc", "c-1.10"])
        #expect(report.ran == journal.entries)
    }

    @Test func runsEachStepOnce() throws {
        let migrator = migrator([("one", "1.1.0"), ("two", "1.2.0")], baseline: "1.0.0")
        try migrator.run(for: running("1.2.0"))
        let second = try migrator.run(for: running("1.2.0"))
        try migrator.run(for: running("1.3.0"))
        #expect(journal.entries == ["one", "two"])
        #expect(second.ran.isEmpty)
    }

    @Test func catchesUpSkippedVersions() throws {
        var seen: [String: RunningVersion?] = [:]
        var migrator = migrator([("0.9", "0.9.0")])
        migrator.registerFirstInstall("create") { _ in }
        try migrator.run(for: running("0.8.0"))
        for (name, version) in [("1.0", "1.0.0"), ("1.1", "1.1.0"), ("1.2", "1.2.0")] as [(String, Version)] {
            migrator.register(name, at: version) { [journal] context in
                journal.append(name)
                seen[name] = context.previous
            }
        }
        let report = try migrator.run(for: running("1.2.0"))
        #expect(report.ran == ["0.9", "1.0", "1.1", "1.2"])
        #expect(report.previous == running("0.8.0"))
        #expect(seen["1.1"] == running("0.8.0"))
    }

    @Test func neverRunsStepsAboveTheRunningVersion() throws {
        let migrator = migrator([("now", "1.0.0"), ("later", "1.1.0"), ("beta", "1.1.0-beta.1")], baseline: .zero)
        try migrator.run(for: running("1.1.0-alpha"))
        #expect(journal.entries == ["now"])
        try migrator.run(for: running("1.1.0-beta.2"))
        #expect(journal.entries == ["now", "beta"])
        try migrator.run(for: running("1.1.0"))
        #expect(journal.entries == ["now", "beta", "later"])
    }

    @Test func aDowngradeRunsNothingNewAndAReUpgradeDoesNotRepeat() throws {
        let migrator = migrator([("two", "2.0.0")], baseline: "1.0.0")
        try migrator.run(for: running("2.0.0"))
        let down = try migrator.run(for: running("1.0.0"))
        let up = try migrator.run(for: running("2.0.0"))
        #expect(down.ran.isEmpty && up.ran.isEmpty)
        #expect(journal.entries == ["two"])
    }

    @Test func aStepAddedLaterForAnOldVersionStillRuns() throws {
        var migrator = migrator([("one", "1.1.0")], baseline: "1.0.0")
        try migrator.run(for: running("2.0.0"))
        migrator.register("forgotten", at: "1.5.0") { [journal] _ in journal.append("forgotten") }
        try migrator.run(for: running("2.0.1"))
        #expect(journal.entries == ["one", "forgotten"])
    }

    // MARK: First install, baseline

    @Test func aFirstInstallRunsOnlyTheInitialisation() throws {
        var migrator = migrator([("old", "0.5.0"), ("current", "1.0.0"), ("future", "1.1.0")])
        var flags: [Bool] = []
        migrator.registerFirstInstall("create") { [journal] context in
            journal.append("create")
            flags.append(context.isFirstInstall)
        }
        migrator.registerEveryVersionChange("hook") { [journal] _ in journal.append("hook") }
        let plan = try migrator.plan(for: running("1.0.0"))
        #expect(plan.isFirstInstall && plan.steps == ["create"])
        let install = try migrator.run(for: running("1.0.0"))
        #expect(install.isFirstInstall)
        #expect(install.ran == ["create"])
        #expect(flags == [true])

        let upgrade = try migrator.run(for: running("1.1.0"))
        #expect(!upgrade.isFirstInstall)
        #expect(upgrade.ran == ["future", "hook"])
        #expect(journal.entries == ["create", "future", "hook"])
    }

    @Test func aBaselineAdoptsAnInstallThatPredatesTheLibrary() throws {
        var asked: [Scope] = []
        var migrator = migrator([("1.2", "1.2.0"), ("1.5", "1.5.0"), ("2.0", "2.0.0")])
        migrator.registerFirstInstall("create") { [journal] _ in journal.append("create") }
        migrator.baseline = { scope in
            asked.append(scope)
            return scope == .app ? "1.4.0" : nil
        }
        let plan = try migrator.plan(for: running("2.0.0"))
        #expect(plan.baseline == "1.4.0" && !plan.isFirstInstall && plan.steps == ["1.5", "2.0"])
        let report = try migrator.run(for: running("2.0.0"))
        #expect(report.baseline == "1.4.0")
        #expect(report.previous == running("1.4.0", ""))
        #expect(report.ran == ["1.5", "2.0"])
        // Asked once per scope with no record; never again once recorded.
        try migrator.run(for: running("2.0.0"))
        #expect(asked == [.app, .app])
        let fresh = try migrator.run(for: running("2.0.0"), scope: "user-new")
        #expect(fresh.isFirstInstall && fresh.ran == ["create"])
    }

    @Test func aZeroBaselineRunsEveryStepOnAFreshInstall() throws {
        let migrator = migrator([("a", "0.1.0"), ("b", "1.0.0")], baseline: .zero)
        #expect(try migrator.run(for: running("1.0.0")).ran == ["a", "b"])
    }

    @Test func aFailedInitialisationIsRetried() throws {
        var migrator = migrator()
        var attempts = 0
        migrator.registerFirstInstall("create") { _ in
            attempts += 1
            if attempts == 1 { throw TestFailure("disk full") }
        }
        #expect(throws: AppVersionsError.self) { try migrator.run(for: running("1.0.0")) }
        let second = try migrator.run(for: running("1.0.0"))
        #expect(second.isFirstInstall && second.ran == ["create"])
        #expect(try migrator.plan(for: running("1.0.0")).isUpToDate)
    }

    // MARK: Hooks

    @Test func versionChangeHooksRunOnEveryChangeAndNotOtherwise() throws {
        var migrator = migrator([("two", "2.0.0")], baseline: "1.0.0")
        var changes: [String] = []
        migrator.registerEveryVersionChange("whats-new") { context in
            changes.append("\(context.previous.map { "\($0)" } ?? "-") -> \(context.running)")
        }
        try migrator.run(for: running("1.0.0"))                 // legacy data adopted: a change
        try migrator.run(for: running("1.0.0"))                 // no change
        try migrator.run(for: running("1.0.0", "b2"))           // new build
        try migrator.run(for: running("2.0.0", "b3"))           // upgrade
        try migrator.run(for: running("1.0.0", "b2"))           // rollback
        try migrator.run(for: running("1.0.0", "b2"))           // no change
        #expect(changes == [
            "1.0.0 -> 1.0.0 (build b1)",
            "1.0.0 (build b1) -> 1.0.0 (build b2)",
            "1.0.0 (build b2) -> 2.0.0 (build b3)",
            "2.0.0 (build b3) -> 1.0.0 (build b2)",
        ])
    }

    @Test func hooksRunAfterVersionSteps() throws {
        var migrator = migrator([("v2", "2.0.0")], baseline: "1.0.0")
        migrator.registerEveryVersionChange("hook") { [journal] _ in journal.append("hook") }
        migrator.register("v1.5", at: "1.5.0") { [journal] _ in journal.append("v1.5") }
        #expect(try migrator.run(for: running("2.0.0")).ran == ["v1.5", "v2", "hook"])
    }

    // MARK: Error policy

    @Test func aStoppingStepIsNotRecordedAndIsRetried() throws {
        var migrator = migrator([("before", "1.1.0"), ("after", "1.3.0")], baseline: "1.0.0")
        var fail = true
        migrator.register("flaky", at: "1.2.0", onError: .stop) { [journal] _ in
            journal.append("flaky")
            if fail { throw TestFailure("the server was down") }
        }
        let error = #expect(throws: AppVersionsError.self) { try migrator.run(for: running("1.3.0")) }
        #expect(error?.code == .stepFailed)
        #expect(error?.subject == "flaky")
        #expect((error?.underlying as? TestFailure)?.description == "the server was down")
        #expect(error?.description == "Migration step \"flaky\" failed in scope \"app\" with the server was down; fix the cause and start the app again to retry it.")
        #expect(journal.entries == ["before", "flaky"])

        fail = false
        let retry = try migrator.run(for: running("1.3.0"))
        #expect(retry.ran == ["flaky", "after"])
        #expect(retry.interrupted.isEmpty)
        #expect(journal.entries == ["before", "flaky", "flaky", "after"])
    }

    @Test func aContinuingStepIsRecordedAsFailedAndNotRetried() throws {
        var migrator = migrator([("after", "1.3.0")], baseline: "1.0.0")
        migrator.register("optional-cleanup", at: "1.2.0", onError: .continue) { [journal] _ in
            journal.append("optional-cleanup")
            throw TestFailure("nothing to clean")
        }
        let report = try migrator.run(for: running("1.3.0"))
        #expect(report.ran == ["after"])
        #expect(report.failed.map(\.name) == ["optional-cleanup"])
        #expect(report.failed.first?.message == "nothing to clean")
        #expect(report.failed.first?.isRetried == false)
        let again = try migrator.run(for: running("1.4.0"))
        #expect(again.ran.isEmpty && again.failed.isEmpty)
        #expect(journal.entries == ["optional-cleanup", "after"])
    }

    // MARK: Interruption

    @Test func aStepThatNeverEndedIsReportedAndRetried() throws {
        // A "began" with no "ended" is what a process killed mid-step leaves behind;
        // the crash itself is exercised with a real SIGKILL in CrashSafetyTests.
        var migrator = migrator([("fast", "1.1.0")], baseline: "1.0.0")
        var retryFlags: [String: Bool] = [:]
        var crash = true
        migrator.register("slow", at: "1.2.0") { context in
            retryFlags[context.step] = context.isRetryAfterInterruption
            if crash { throw TestFailure("simulated crash") }
        }
        migrator.register("last", at: "1.2.0") { context in retryFlags[context.step] = context.isRetryAfterInterruption }
        // Simulate the crash: copy the ledger up to and including slow's "began".
        #expect(throws: AppVersionsError.self) { try migrator.run(for: running("1.2.0")) }
        let entries = store.entries(in: .app)
        let began = try #require(entries.lastIndex { $0.line.hasPrefix("began\t") && $0.line.contains("\tslow\t") })
        store.remove(.app)
        store.append(Array(entries[...began]), to: .app)

        crash = false
        let plan = try migrator.plan(for: running("1.2.0"))
        #expect(plan.interrupted.map(\.name) == ["slow"])
        let report = try migrator.run(for: running("1.2.0"))
        #expect(report.interrupted.map(\.name) == ["slow"])
        #expect(report.interrupted.first?.running == running("1.2.0"))
        #expect(report.ran == ["slow", "last"])
        #expect(retryFlags == ["slow": true, "last": false])
        #expect(try migrator.plan(for: running("1.2.0")).interrupted.isEmpty)
    }

    // MARK: Scopes, reset, plan

    @Test func scopesAreMigratedIndependently() throws {
        let migrator = migrator([("split", "1.1.0"), ("index", "1.2.0")], baseline: "1.0.0")
        let alice: Scope = "user-alice@example.com"
        let bob: Scope = "user-bob"
        #expect(try migrator.run(for: running("1.1.0"), scope: alice).ran == ["split"])
        #expect(try migrator.run(for: running("1.2.0"), scope: bob).ran == ["split", "index"])
        #expect(try migrator.run(for: running("1.2.0"), scope: alice).ran == ["index"])
        #expect(try migrator.plan(for: running("1.2.0"), scope: alice).isUpToDate)
        #expect(try migrator.plan(for: running("1.2.0"), scope: .app).steps == ["split", "index"])
    }

    @Test func resetForgetsTheMigrationRecordButNotTheHistory() throws {
        var migrator = migrator([("one", "1.1.0")])
        migrator.registerFirstInstall("create") { [journal] _ in journal.append("create") }
        let tracker = VersionTracker(store: store, osReleasePath: nil)
        try tracker.record(running("1.1.0"))
        try migrator.run(for: running("1.1.0"))
        try migrator.reset()
        #expect(try migrator.plan(for: running("1.1.0")).isFirstInstall)
        try migrator.run(for: running("1.1.0"))
        #expect(journal.entries == ["create", "create"])
        #expect(try tracker.history().events.count == 1)
    }

    @Test func aNormalStartWritesNothing() throws {
        let migrator = migrator([("one", "1.1.0")], baseline: "1.0.0")
        try migrator.run(for: running("1.1.0"))
        let before = store.entries(in: .app)
        let plan = try migrator.plan(for: running("1.1.0"))
        #expect(plan.isUpToDate && plan.steps.isEmpty)
        try migrator.run(for: running("1.1.0"))
        #expect(store.entries(in: .app) == before)
    }

    @Test func stepsCanBeBuiltAsValues() throws {
        var migrator = migrator(baseline: "1.0.0")
        let steps = [
            MigrationStep("b", trigger: .version("1.2.0")) { [journal] _ in journal.append("b") },
            MigrationStep("a", trigger: .version("1.1.0"), onError: .continue) { [journal] _ in journal.append("a") },
        ]
        steps.forEach { migrator.register($0) }
        #expect(migrator.stepNames == ["b", "a"])
        #expect(try migrator.run(for: running("1.2.0")).ran == ["a", "b"])
    }

    @Test func aThrowingBaselineIsReported() throws {
        var migrator = migrator()
        migrator.baseline = { _ in throw TestFailure("cannot read legacy database") }
        let error = #expect(throws: AppVersionsError.self) { try migrator.run(for: running("1.0.0")) }
        #expect(error?.code == .stepFailed)
        #expect(error?.description.contains("cannot read legacy database") == true)
    }

    @Test func aFailingStoreIsReportedAsAStoreError() throws {
        struct BrokenStore: LedgerStore {
            func entries(in scope: Scope) throws -> [LedgerEntry] { throw TestFailure("database is locked") }
            func append(_ entries: [LedgerEntry], to scope: Scope) throws {}
        }
        let migrator = Migrator(store: BrokenStore())
        let error = #expect(throws: AppVersionsError.self) { try migrator.run(for: running("1.0.0")) }
        #expect(error?.code == .storeFailed)
        #expect(error?.description.contains("database is locked") == true)
    }
}
