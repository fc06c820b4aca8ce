import SwitchbackCore
import SwitchbackTestSupport
import Testing

/// The launch planner: one pure function decides a start, for the launcher, `status` and the
/// supervisor alike.
@Suite struct LaunchPlannerTests {
    static let c = String(repeating: "c", count: 64), p = String(repeating: "a", count: 64)
    static let manifest = StartPlanTests.manifest(current: c, previous: p)
    static let rolledBack = StartPlanTests.rolledBack(from: c, to: p)
    static func broken(_ slot: BuildSlot) -> String { "The \(slot.rawValue) slot at /b/slots/\(slot.rawValue)/libAppCore.so is missing; rebuild the bundle with scripts/bundle." }

    static func planner(state: LoadedState = LoadedState(state: .initial, isFirstStart: true), trusted: Bool = true,
                        health: HealthRecord = HealthRecord(), forced: String? = nil, manifest: Manifest = manifest,
                        broken: Set<BuildSlot> = [], floor: String? = nil) -> LaunchPlanner {
        LaunchPlanner(manifest: manifest, state: state, isTrusted: trusted, health: health, forcedSlot: forced,
                      slotProblem: { broken.contains($0) ? Self.broken($0) : nil }, dataFloor: { floor })
    }

    @Test func aPlainStartChecksOnlyTheSlotItRunsAndReadsNoDataState() throws {
        var asked: [BuildSlot] = []
        var readData = false
        let planner = LaunchPlanner(manifest: Self.manifest, state: LoadedState(state: .initial, isFirstStart: true), isTrusted: true,
                                    health: HealthRecord(), forcedSlot: nil,
                                    slotProblem: { asked.append($0); return nil }, dataFloor: { readData = true; return nil })
        let plan = try planner.plan()
        #expect(plan.slot == .current && plan.reason.code == "first-start")
        #expect(asked == [.current])
        #expect(!readData)
        #expect(plan.countsTry)
    }

    @Test func aBrokenChosenSlotFallsBackAndSaysSo() throws {
        let plan = try Self.planner(broken: [.current]).plan()
        #expect(plan.slot == .previous)
        #expect(plan.reason.code == "fallback")
        #expect(plan.closingNote(Self.manifest, state: LoadedState(state: .initial)) == "\(Self.broken(.current)) Running the previous slot (1.1.0) instead.")
    }

    @Test func aForcedBrokenSlotRefusesTheStart() throws {
        let plan = try Self.planner(forced: "previous", broken: [.previous]).plan()
        #expect(plan.slot == nil)
        #expect(plan.reason == .refused(.forcedSlotBroken(slot: .previous, failure: Self.broken(.previous))))
        #expect(plan.reason.code == "forced-slot-broken")
        #expect(plan.refusal?.sentence(Self.manifest) == "\(Self.broken(.previous)) SWITCHBACK_SLOT forces this slot, so the launcher does not fall back.")
        #expect(plan.sentence(Self.manifest).hasPrefix("The next start is refused (exit 70): "))
        #expect(!plan.countsTry)
    }

    @Test func neitherSlotRunning() throws {
        let plan = try Self.planner(broken: [.current, .previous]).plan()
        #expect(plan.refusal?.sentence(Self.manifest) == "neither slot can run. First: \(Self.broken(.current)) Then: \(Self.broken(.previous)) Rebuild the bundle with scripts/bundle, or restore the files named above.")
    }

    @Test func aFallbackToThePreviousBuildNeedsItsDataConvertedByTheBrokenCurrentOne() throws {
        let plan = try Self.planner(broken: [.current], floor: "1.2.0").plan()
        #expect(plan.slot == nil)
        #expect(plan.reason.code == "fallback-cannot-read-data")
        let sentence = try #require(plan.refusal?.sentence(Self.manifest))
        #expect(sentence == "\(Self.broken(.current)) The previous slot (1.1.0) cannot run instead: The current build (1.2.0) could not be loaded to convert its data back for 1.1.0: \(Self.broken(.current)) Run 'rollbackctl rollback --force' to switch without converting the data.")
    }

    @Test func aRollbackWhoseDataNeedsConvertingConvertsFirst() throws {
        let plan = try Self.planner(state: Self.rolledBack, floor: "1.2.0").plan()
        #expect(plan.slot == .previous && plan.convertsData)
        let refused = Self.planner(state: Self.rolledBack, floor: "1.2.0").afterRefusedConversion(plan, problem: "It cannot.")
        #expect(refused.slot == .current && refused.reason.code == "data-not-convertible")
        #expect(refused.notes.map { LaunchPlan.sentence(of: $0, Self.manifest) } == ["It cannot. Running the current slot (1.2.0) instead."])
    }

    @Test func anUntrustedStateNeverConvertsData() throws {
        let untrusted = LoadedState(state: Self.rolledBack.state, problem: SwitchbackError(.insecurePermissions, "The state directory /s is writable by other users."),
                                    untrustedRejection: "an operator rolled back")
        // Never a refusal (issue 36, part 3): an untrusted state cannot stop every start.
        let plan = try Self.planner(state: untrusted, trusted: false, floor: "1.2.0").plan()
        #expect(plan.refusal == nil)
        #expect(plan.slot == .current && !plan.convertsData)
        #expect(plan.reason.code == "data-not-convertible")
        #expect(plan.notes.map { LaunchPlan.sentence(of: $0, Self.manifest) } == ["The state directory /s is writable by other users; it records that an operator rolled back, but the previous slot (1.1.0) cannot run on the data: its reader floor is 1.2.0, and converting it back would write to a state directory the launcher does not trust; fix its permissions as said, and the choice it records counts again. Running the current slot (1.2.0) instead."])
        #expect(plan.closingNote(Self.manifest, state: untrusted) == nil)
        #expect(try Self.planner(state: untrusted, trusted: false, forced: "previous", floor: "1.2.0").plan().slot == .previous)
    }

    /// The refused automatic switch: the failing build stays, and the plan names it (the
    /// launcher once went on with the other slot's decision and converted a second time).
    @Test func aRefusedAutomaticSwitchKeepsTheFailingBuild() throws {
        var record = HealthRecord()
        record.set(SlotHealth(build: Self.c, verdict: .trial(triesLeft: 0), failedStarts: 3))
        let planner = Self.planner(health: record)
        let plan = try planner.plan()
        #expect(plan.slot == .previous && plan.health?.switchFlag?.slot == .previous && plan.health?.markBad == .current)
        let refused = planner.afterRefusedSwitch(plan, refusal: "The data cannot be converted back.")
        #expect(refused.slot == .current)
        #expect(refused.reason.code == "switch-refused")
        #expect(!refused.convertsData && refused.health?.switchFlag == nil && refused.health?.markBad == .current)
        #expect(refused.notes.map { LaunchPlan.sentence(of: $0, Self.manifest) }
                == ["The current build (1.2.0) failed 3 starts without being marked good, but it stays: The data cannot be converted back."])
        #expect(refused.sentence(Self.manifest) == "The next start runs the current slot (1.2.0) because the current build failed 3 starts without being marked good, but switching to the previous build (1.1.0) was refused: the data cannot be converted back.")
    }

    @Test func aSwitchThatCannotConvertIsPredictedWhenTheCurrentSlotIsBroken() throws {
        var record = HealthRecord()
        record.set(SlotHealth(build: Self.c, verdict: .trial(triesLeft: 0), failedStarts: 3))
        let plan = try Self.planner(health: record, broken: [.current]).plan()
        #expect(plan.health?.switchFlag == nil, "the switch would be refused: it is not attempted")
        #expect(plan.slot == .previous && plan.reason.code == "fallback")
    }

    @Test func theSupervisorKeepsItsRunningChildUnlessItIsBad() throws {
        var record = HealthRecord()
        record.set(SlotHealth(build: Self.c, verdict: .trial(triesLeft: 0), failedStarts: 3))
        func planner(_ record: HealthRecord, running: BuildSlot?) -> LaunchPlanner {
            LaunchPlanner(manifest: Self.manifest, state: LoadedState(state: .initial), isTrusted: true, health: record,
                          forcedSlot: nil, running: running, checksSlots: false)
        }
        #expect(try planner(record, running: .current).plan().decision.slot == .current)
        #expect(try planner(record, running: .current).plan().reason.code == "kept-running")
        #expect(try planner(record, running: nil).plan().decision.slot == .previous)
        record.set(SlotHealth(build: Self.c, verdict: .bad, markedBy: .cli))
        #expect(try planner(record, running: .current).plan().decision.slot == .previous)
    }

    @Test func anInvalidForcedSlotIsAUsageError() {
        #expect(throws: SwitchbackError.self) { try Self.planner(forced: "both").plan() }
    }

    // MARK: - Status and the launcher agree

    /// A deterministic generator: the seed is printed with any failure.
    typealias Generator = SeededGenerator

    /// One start situation: everything a start knows.
    struct Situation: CustomStringConvertible {
        var manifest: Manifest
        var state: LoadedState
        var trusted: Bool
        var health: HealthRecord
        var forced: String?
        var broken: Set<BuildSlot>
        var floor: String?
        var description: String {
            "state \(state.state.slot.rawValue) (\(state.state.source.rawValue)) problem \(state.problem?.code.rawValue ?? "none") trusted \(trusted) health \(health.builds.map { "\($0.build.prefix(1)):\($0.verdict)/\($0.markedBy?.rawValue ?? "-")" }) forced \(forced ?? "nil") broken \(broken.map(\.rawValue).sorted()) floor \(floor ?? "nil") firstRelease \(manifest.isFirstRelease)"
        }

        static func generate(_ g: inout Generator) -> Situation {
            let firstRelease = g.chance(10)
            let manifest = StartPlanTests.manifest(current: c, previous: firstRelease ? c : p)
            let rollback = g.chance(50)
            let source: ChoiceSource = g.pick([.cli, .remote, .auto, .default])
            var persisted = PersistedState(rollback: rollback, source: source, reason: g.chance(50) ? "why" : nil, changedAt: 1_795_000_000)
            if rollback, g.chance(70) {
                persisted.fromBuild = BuildIdentity(sha256: g.chance(85) ? c : String(repeating: "e", count: 64), version: "1.2.0")
                persisted.toBuild = BuildIdentity(sha256: p, version: "1.1.0")
            }
            var trusted = true
            let state: LoadedState
            switch g.next() % 10 {
            case 0: state = LoadedState(state: .initial, isFirstStart: true)
            case 1: state = LoadedState(state: persisted, problem: SwitchbackError(.stateInvalid, "The state file /s/state is truncated."), recoveredFromHistory: true)
            case 2: state = LoadedState(state: .initial, problem: SwitchbackError(.stateInvalid, "The state file /s/state is empty."))
            case 3:
                trusted = false
                let rejection = g.chance(50)
                state = LoadedState(state: rejection ? persisted : .initial, problem: SwitchbackError(.insecurePermissions, "The state directory /s is writable by other users."),
                                    untrustedRejection: rejection ? "an operator rolled back" : nil)
            default: state = LoadedState(state: persisted)
            }
            var health = HealthRecord()
            if trusted {
                for build in Set([manifest.current.sha256, manifest.previous.sha256]) where g.chance(60) {
                    let verdict: SlotHealth.Verdict = g.pick([.good, .bad, .trial(triesLeft: 0), .trial(triesLeft: 1), .trial(triesLeft: 3)])
                    health.set(SlotHealth(build: build, verdict: verdict, failedStarts: verdict == .trial(triesLeft: 0) ? 3 : 0,
                                          lastGoodAt: g.chance(50) ? Int64(1_795_000_000 + g.next() % 1000) : nil,
                                          markedBy: verdict == .bad ? g.pick([.auto, .cli, .remote]) : nil))
                }
            }
            var broken: Set<BuildSlot> = []
            for slot in BuildSlot.allCases where g.chance(25) { broken.insert(slot) }
            return Situation(manifest: manifest, state: state, trusted: trusted, health: health,
                             forced: g.pick([nil, nil, nil, nil, "", "current", "previous"]), broken: broken,
                             floor: g.chance(30) ? "1.2.0" : nil)
        }

        func problem(_ slot: BuildSlot) -> String? { broken.contains(slot) ? LaunchPlannerTests.broken(slot) : nil }

        /// What `rollbackctl status` does: both slots checked first, then the plan.
        func status() throws -> LaunchPlan {
            var problems: [BuildSlot: String] = [:]
            for slot in BuildSlot.allCases { problems[slot] = problem(slot) }
            return try LaunchPlanner(manifest: manifest, state: state, isTrusted: trusted, health: health, forcedSlot: forced,
                                     slotProblem: { problems[$0] }, dataFloor: { floor }).plan()
        }

        /// What the launcher does: slots checked lazily, then the plan carried out, where the
        /// switch of automatic rollback and the data conversion really run — modelled as the
        /// real ones behave: a conversion needs the current build loadable, a switch to the
        /// previous build needs it runnable and the conversion to work.
        func launcher() throws -> LaunchPlan {
            var checked: [BuildSlot: String?] = [:]
            let planner = LaunchPlanner(manifest: manifest, state: state, isTrusted: trusted, health: health, forcedSlot: forced,
                                        slotProblem: { slot in
                                            if let known = checked[slot] { return known }
                                            checked[slot] = problem(slot)
                                            return problem(slot)
                                        }, dataFloor: { floor })
            var plan = try planner.plan()
            if plan.countsTry, let (slot, _) = plan.health?.switchFlag, slot == .previous {
                if let previous = problem(.previous) {
                    plan = planner.afterRefusedSwitch(plan, refusal: "\(previous) Nothing was converted and the flag is unchanged: a rollback needs a previous build that can run.")
                } else if let current = problem(.current) {
                    plan = planner.afterRefusedSwitch(plan, refusal: LaunchPlan.conversionUnavailable(manifest: manifest, message: current))
                }
            }
            if plan.refusal == nil, plan.convertsData, let current = problem(.current) {
                plan = planner.afterRefusedConversion(plan, problem: LaunchPlan.conversionUnavailable(manifest: manifest, message: current))
            }
            return plan
        }
    }

    @Test func statusNamesTheSlotTheLauncherRunsInThousandsOfSituations() throws {
        let seed: UInt64 = 0x5EED_2026_1125
        var g = Generator(seed: seed)
        var refused = 0, fellBack = 0
        for index in 0..<5000 {
            let situation = Situation.generate(&g)
            let status: LaunchPlan, launcher: LaunchPlan
            do {
                status = try situation.status()
                launcher = try situation.launcher()
            } catch {
                Issue.record("seed \(seed), situation \(index): \(situation): \(error)")
                continue
            }
            let what = "seed \(seed), situation \(index): \(situation)"
            #expect(status.slot == launcher.slot, "\(what): status \(status.reason.code), launcher \(launcher.reason.code)")
            #expect(status.refusal?.sentence(situation.manifest) == launcher.refusal?.sentence(situation.manifest), "\(what)")
            if let slot = status.slot { #expect(situation.problem(slot) == nil, "\(what): runs a broken slot") }
            if launcher.slot == .previous, situation.floor != nil, !launcher.isForced {
                // The previous build never runs on data it cannot read.
                #expect(situation.trusted && launcher.convertsData && situation.problem(.current) == nil, "\(what)")
            }
            if status.refusal != nil { refused += 1 }
            if status.fallback != nil { fellBack += 1 }
        }
        // The generator reaches the interesting cases.
        #expect(refused > 100 && fellBack > 300, "refused \(refused), fell back \(fellBack)")
    }
}
