import SwitchbackCore
import Testing

/// The pure start plan: which build runs across releases, and what automatic rollback may do.
@Suite struct StartPlanTests {
    static let c = String(repeating: "c", count: 64), p = String(repeating: "a", count: 64), n = String(repeating: "e", count: 64)

    static func manifest(current: String, currentVersion: String = "1.2.0", previous: String, previousVersion: String = "1.1.0") -> Manifest {
        Manifest(appID: "test", current: .init(version: currentVersion, build: "", abiStamp: "", size: 1, sha256: current),
                 previous: .init(version: previousVersion, build: "", abiStamp: "", size: 1, sha256: previous))
    }

    static func rolledBack(from: String, to: String, source: ChoiceSource = .cli) -> LoadedState {
        LoadedState(state: PersistedState(rollback: true, source: source, reason: "bad", changedAt: 1_795_000_000,
                                          fromBuild: BuildIdentity(sha256: from, version: "1.2.0"),
                                          toBuild: BuildIdentity(sha256: to, version: "1.1.0")))
    }

    @Test func aRollbackStandsWhileTheCurrentBuildIsTheOneItMovedAwayFrom() throws {
        let plan = try StartPlan.make(state: Self.rolledBack(from: Self.c, to: Self.p), health: HealthRecord(),
                                      manifest: Self.manifest(current: Self.c, previous: Self.p), forcedSlot: nil)
        #expect(plan.decision.slot == .previous)
        #expect(plan.superseded == nil)
    }

    @Test func aNewCurrentBuildSupersedesTheRollback() throws {
        // 1.3.0 current, and the previous slot now holds the very build rolled back from.
        let manifest = Self.manifest(current: Self.n, currentVersion: "1.3.0", previous: Self.c, previousVersion: "1.2.0")
        let plan = try StartPlan.make(state: Self.rolledBack(from: Self.c, to: Self.p), health: HealthRecord(),
                                      manifest: manifest, forcedSlot: nil)
        #expect(plan.decision.slot == .current)
        #expect(plan.superseded != nil)
        #expect(plan.decision.explanation.hasPrefix("release 1.3.0 (SHA-256 eeeeeeeeeeee) superseded an operator's rollback of "))
        #expect(plan.decision.explanation.hasSuffix(" from 1.2.0 (SHA-256 cccccccccccc)"))
    }

    @Test func aForcedSlotIsNeverSuperseded() throws {
        let manifest = Self.manifest(current: Self.n, previous: Self.c)
        let plan = try StartPlan.make(state: Self.rolledBack(from: Self.c, to: Self.p), health: HealthRecord(),
                                      manifest: manifest, forcedSlot: "previous")
        #expect(plan.decision.slot == .previous)
        #expect(plan.superseded == nil)
    }

    @Test func aStateWithoutBuildsIsNeverSuperseded() throws {
        let state = LoadedState(state: PersistedState(rollback: true, source: .cli, reason: nil, changedAt: 1))
        let plan = try StartPlan.make(state: state, health: HealthRecord(), manifest: Self.manifest(current: Self.n, previous: Self.c), forcedSlot: nil)
        #expect(plan.decision.slot == .previous)
    }

    @Test func automaticRollbackNeverReturnsToARejectedBuild() throws {
        var record = HealthRecord()
        record.set(SlotHealth(build: Self.c, verdict: .bad, note: "an operator rolled back from it: bad", markedBy: .cli))
        record.set(SlotHealth(build: Self.p, verdict: .trial(triesLeft: 0), failedStarts: 3))
        let plan = try StartPlan.make(state: Self.rolledBack(from: Self.c, to: Self.p), health: record,
                                      manifest: Self.manifest(current: Self.c, previous: Self.p), forcedSlot: nil)
        #expect(plan.decision.slot == .previous)
        #expect(plan.health.switchFlag == nil)
        #expect(plan.health.markBad == .previous)
        #expect(plan.health.message?.hasPrefix("WARNING: the previous build (1.1.0) failed 3 starts without being marked good, but automatic rollback will not switch to the current build (1.2.0)") == true)
    }

    @Test func aBuildBadByAutomaticVerdictIsStillATargetWhenTheOtherFails() throws {
        var record = HealthRecord()
        record.set(SlotHealth(build: Self.c, verdict: .trial(triesLeft: 0), failedStarts: 3))
        let plan = try StartPlan.make(state: LoadedState(state: .initial, isFirstStart: true), health: record,
                                      manifest: Self.manifest(current: Self.c, previous: Self.p), forcedSlot: nil)
        #expect(plan.decision.slot == .previous)
        #expect(plan.health.switchFlag?.slot == .previous)
    }
}

/// The format-2 files: builds recorded, numbers range-checked, format 1 still read.
@Suite struct BuildFormatTests {
    @Test func stateRoundTripsWithItsBuilds() throws {
        let state = PersistedState(rollback: true, source: .remote, reason: "r", changedAt: 1_795_000_000,
                                   fromBuild: BuildIdentity(sha256: StartPlanTests.c, version: "1.2.0"),
                                   toBuild: BuildIdentity(sha256: StartPlanTests.p, version: "1.1.0"))
        #expect(try PersistedState.parse(state.serialized(), path: "s") == state)
    }

    @Test(arguments: ["changed_at=68000000000000000", "changed_at=-1", "changed_at=9223372036854775807", "from.sha256=xyz"])
    func outOfRangeStateValuesAreDamage(line: String) throws {
        let text = "format=2\nrollback=true\nsource=cli\n\(line)\nend=ok\n"
        #expect(throws: SwitchbackError.self) { try PersistedState.parse(Array(text.utf8), path: "s") }
        do { _ = try PersistedState.parse(Array(text.utf8), path: "s") } catch { #expect(error.code == .stateInvalid) }
    }

    @Test func healthRoundTripsByBuildAndReadsFormat1() throws {
        var record = HealthRecord()
        record.set(SlotHealth(build: StartPlanTests.c, verdict: .bad, failedStarts: 3, changedAt: 5, note: "n", version: "1.2.0", markedBy: .auto))
        record.set(SlotHealth(build: StartPlanTests.p, verdict: .trial(triesLeft: 2), failedStarts: 1, version: "1.1.0"))
        #expect(try HealthRecord.parse(record.serialized(), path: "h") == record)

        let old = "format=1\ncurrent.build=\(StartPlanTests.c)\ncurrent.verdict=good\ncurrent.failed_starts=0\nend=ok\n"
        let converted = try HealthRecord.parse(Array(old.utf8), path: "h")
        #expect(converted.health(of: BuildIdentity(sha256: StartPlanTests.c, version: "1.2.0"), tries: 3).isGood)
    }

    @Test(arguments: ["failed_starts=9223372036854775807", "tries_left=-1", "last_good_at=68000000000000000", "marked_by=nobody"])
    func outOfRangeHealthValuesAreDamage(line: String) throws {
        let key = line.split(separator: "=")[0]
        let lines = ["build=\(StartPlanTests.c)", "verdict=trial", "tries_left=1"].filter { !$0.hasPrefix(key + "=") }
        let text = "format=2\n" + lines.joined(separator: "\n") + "\n\(line)\nend=ok\n"
        do { _ = try HealthRecord.parse(Array(text.utf8), path: "h"); Issue.record("parsed \(line)") } catch {
            #expect(error.code == .stateInvalid)
        }
    }

    @Test func theHealthFileKeepsAtMostItsLimitOfBuilds() {
        var record = HealthRecord()
        for i in 0..<(HealthRecord.buildLimit + 5) {
            let sha = String(repeating: "0", count: 60) + String(String(i, radix: 16).reversed()).padding(toLength: 4, withPad: "0", startingAt: 0)
            record.set(SlotHealth(build: sha, verdict: .good, changedAt: Int64(i)))
        }
        #expect(record.builds.count == HealthRecord.buildLimit)
        #expect(record.builds.allSatisfy { ($0.changedAt ?? 0) >= 5 })
    }
}
