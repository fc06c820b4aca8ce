import Foundation
import SwitchbackCore
import SwitchbackTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `rollbackctl status` names the build the next start runs, by construction: both ask the
/// launch planner. Checked here through the real binaries, over 400 generated
/// situations on one bundle copy (its state and slot files reset between situations):
/// the state, the verdicts, broken slots, data the previous build cannot read (with a way
/// back, or none: the published plan `refused`), a switch interrupted between its journal
/// and its flag (a rollback, a rollforward, another bundle's, a damaged journal), an
/// untrusted state directory and a forced slot.
@Suite struct PlanAgreementTests {
    /// Deterministic, so a failure names its seed and situation.
    typealias Generator = SeededGenerator

    enum Breakage: String, CaseIterable { case missing, truncated, worldWritable }

    /// One start situation, written into the bundle copy's state directory and slot files.
    struct Situation: CustomStringConvertible {
        var state: String = "none"
        var verdicts: [String] = []
        var broken: [BuildSlot: Breakage] = [:]
        var floorAbovePrevious = false
        /// The data state's plan for a switch back: "revert", or "refused" (no revert, no snapshot).
        var plan = "revert"
        /// An interrupted switch left behind (`switch.pending`): "none", "rollback", "forced rollback",
        /// "rollforward" (which no version writes: damaged), "another bundle's", "damaged".
        var journal = "none"
        /// The app's own environment for the status and the start: SAMPLE_NO_REVERT=1 with data
        /// that has no way back (the app that made it registers its steps without a revert).
        var environment: [String: String] = [:]
        var untrusted = false
        var forced: String?
        var description: String {
            "state \(state), health \(verdicts), broken \(broken.map { "\($0.key.rawValue):\($0.value.rawValue)" }.sorted()), data floor above previous \(floorAbovePrevious) (plan \(plan)), journal \(journal), untrusted \(untrusted), forced \(forced ?? "no")"
        }
    }

    let t: TestBundle
    let pristine: String
    let current: BuildIdentity, previous: BuildIdentity

    init() throws {
        t = try TestBundle()
        pristine = t.directory + "/pristine"
        try FileManager.default.createDirectory(atPath: pristine, withIntermediateDirectories: false)
        for slot in BuildSlot.allCases { try shell("cp", "-a", t.slotPath(slot), pristine + "/" + slot.rawValue) }
        current = BuildIdentity(sha256: try t.manifestValue("current.sha256"), version: t.currentVersion)
        previous = BuildIdentity(sha256: try t.manifestValue("previous.sha256"), version: t.previousVersion)
    }

    /// Data with no way back, made once by the app itself (a step without a revert, its
    /// snapshot gone), kept to be copied into the situations that have it.
    func keepDataWithNoWayBack() throws {
        try DataSafeRollbackTests.dataWithNoWayBack(t)
        try FileManager.default.createDirectory(atPath: pristine + "/no-way-back", withIntermediateDirectories: false)
        for name in Self.dataFiles { try shell("cp", "-a", t.state + "/" + name, pristine + "/no-way-back/" + name) }
    }

    /// What the app keeps in the state directory about its data.
    static let dataFiles = ["data", "data.versions", "data-state"]

    func write(_ bytes: [UInt8], _ name: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: t.state + "/" + name))
    }

    /// Makes the situation real: the state directory from scratch, the slot files restored,
    /// then broken as said.
    func apply(_ g: inout Generator) throws -> Situation {
        var s = Situation()
        let fm = FileManager.default
        try? fm.removeItem(atPath: t.state)
        try fm.createDirectory(atPath: t.state, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        for slot in BuildSlot.allCases {
            let path = t.slotPath(slot)
            try? fm.removeItem(atPath: path)
            try fm.copyItem(atPath: pristine + "/" + slot.rawValue, toPath: path)
        }
        let now = Int64(Date().timeIntervalSince1970)
        switch g.next() % 6 {
        case 0:
            s.state = "none"
        case 1:
            s.state = "garbage"
            try write(Array("rollback=tru".utf8), "state")
        case 2:
            s.state = "rolled forward"
            try write(PersistedState(rollback: false, source: .cli, reason: "fixed", changedAt: now).serialized(), "state")
        case 3:
            s.state = "superseded rollback"
            try write(PersistedState(rollback: true, source: .cli, reason: "older", changedAt: now,
                                     fromBuild: BuildIdentity(sha256: String(repeating: "e", count: 64), version: "0.9.0"),
                                     toBuild: previous).serialized(), "state")
        default:
            s.state = "rolled back"
            try write(PersistedState(rollback: true, source: g.pick([.cli, .remote, .auto]), reason: "bad", changedAt: now,
                                     fromBuild: current, toBuild: previous).serialized(), "state")
        }
        var record = HealthRecord()
        for build in [current, previous] where g.chance(40) {
            let verdict: SlotHealth.Verdict = g.pick([.good, .bad, .trial(triesLeft: 0), .trial(triesLeft: 2)])
            let markedBy: ChoiceSource? = verdict == .bad ? g.pick([.auto, .cli]) : nil
            record.set(SlotHealth(build: build.sha256, verdict: verdict, failedStarts: verdict == .trial(triesLeft: 0) ? 3 : 0,
                                  lastGoodAt: g.chance(50) ? now - Int64(g.next() % 1000) : nil, changedAt: now,
                                  note: verdict == .bad ? "marked bad" : nil, version: build.version, markedBy: markedBy))
            s.verdicts.append("\(build.version): \(verdict)\(markedBy.map { " by \($0.rawValue)" } ?? "")")
        }
        if !record.builds.isEmpty { try write(record.serialized(), "health") }
        if g.chance(30) {
            s.floorAbovePrevious = true
            if g.chance(35) {
                s.plan = "refused"
                s.environment = DataSafeRollbackTests.noRevert
                for name in Self.dataFiles { try shell("cp", "-a", pristine + "/no-way-back/" + name, t.state + "/" + name) }
            } else {
                try write(Array("published_by=\(current.version)\npublished_at=\(now)\nreader_floor=\(current.version)\nrollback_to=\(previous.version)\nrollback=revert\nend=ok\n".utf8), "data-state")
            }
        }
        if g.chance(20) {
            // A switch killed between its journal and its flag: the start finishes it (or
            // removes a stale or damaged one) before it plans; status must plan the same.
            s.journal = g.pick(["rollback", "rollback", "forced rollback", "rollforward", "another bundle's", "damaged"])
            let journal: [UInt8]
            switch s.journal {
            case "damaged": journal = Array("format=1\nrollback=tru\n".utf8)
            case "rollforward":
                journal = Array("format=1\nrollback=false\nsource=cli\nforce=false\nstarted_at=\(now)\nfrom.sha256=\(current.sha256)\nend=ok\n".utf8)
            default:
                journal = SwitchJournal(source: g.pick([.cli, .remote, .auto]), reason: "interrupted", force: s.journal == "forced rollback", startedAt: now,
                                        fromBuild: s.journal == "another bundle's" ? String(repeating: "e", count: 64) : current.sha256).serialized()
            }
            try write(journal, "switch.pending")
        }
        for slot in BuildSlot.allCases where g.chance(25) {
            let breakage: Breakage = g.pick(Breakage.allCases)
            s.broken[slot] = breakage
            let path = t.slotPath(slot)
            switch breakage {
            case .missing: try fm.removeItem(atPath: path)
            case .truncated: try shell("truncate", "-s", "4096", path)
            case .worldWritable: try shell("chmod", "666", path)
            }
        }
        if g.chance(8) {
            s.untrusted = true
            try shell("chmod", "777", t.state)
        }
        s.forced = g.pick([nil, nil, nil, nil, nil, "current", "previous"])
        return s
    }

    @Test func statusNamesTheSlotTheLauncherRuns() throws {
        defer { try? FileManager.default.removeItem(atPath: t.directory) }
        try keepDataWithNoWayBack()
        let seed: UInt64 = 0x5EED_0026
        var g = Generator(seed: seed)
        var ran = 0, refused = 0
        var journals = 0, refusedPlans = 0
        for index in 0..<400 {
            let situation = try apply(&g)
            var environment = situation.environment
            if let forced = situation.forced { environment["SWITCHBACK_SLOT"] = forced }
            let what = "seed \(seed), situation \(index): \(situation)"
            let status = try t.status(environment: environment)
            let start = try t.launcher("version", environment: environment)
            if let slot = status.activeSlot {
                ran += 1
                let version = slot == "current" ? current.version : previous.version
                // The app of that slot ran: it printed its version, or (in a state directory
                // it does not trust either) refused its data naming its version.
                let appRan = start.status == 0 ? start.stdout == version + "\n"
                    : start.status == 1 && start.stderr.contains("Error: the app (version \(version)) could not prepare its data")
                #expect(appRan, "\(what): status said \(slot) (\(status.reasonCode)), the launcher: \(start)")
            } else {
                refused += 1
                let refusal = try #require(status.refusal, "\(what): active_slot null without a refusal")
                #expect(start.status == 70, "\(what): status refused (\(refusal)), the launcher: \(start)")
                let last = start.stderr.split(separator: "\n").last.map(String.init)
                #expect(last == "launcher: \(refusal)", "\(what): \(start)")
                #expect(status.explanation.hasSuffix(refusal))
            }
            if situation.untrusted { try shell("chmod", "700", t.state) }
            if situation.journal != "none" { journals += 1 }
            if situation.floorAbovePrevious && situation.plan == "refused" { refusedPlans += 1 }
        }
        #expect(ran > 100 && refused > 10, "ran \(ran), refused \(refused)")
        #expect(journals > 40 && refusedPlans > 20, "journals \(journals), refused data plans \(refusedPlans)")
    }

    /// A refused automatic switch: the build that failed stays and runs, the one line says so,
    /// and the data is not converted a second time for a switch that did not happen.
    @Test func aRefusedAutomaticSwitchSaysTheFailingBuildStays() throws {
        defer { try? FileManager.default.removeItem(atPath: t.directory) }
        try DataSafeRollbackTests.add(t, "old", ["SWITCHBACK_SLOT": "previous"].merging(DataSafeRollbackTests.noRevert) { $1 })
        try DataSafeRollbackTests.add(t, "new", ["SWITCHBACK_SLOT": "current"].merging(DataSafeRollbackTests.noRevert) { $1 })
        try FileManager.default.removeItem(atPath: t.state + "/data.versions/snapshots")
        for _ in 0..<3 { #expect(try t.launcher("crash", environment: DataSafeRollbackTests.noRevert).signaled) }

        let fourth = try t.launcher("note", "list", environment: DataSafeRollbackTests.noRevert)
        #expect(fourth.status == 0)
        #expect(fourth.stdout == "old\nnew\n")
        let c = t.currentVersion, p = t.previousVersion
        #expect(fourth.stderr == "launcher: The current build (\(c)) failed 3 starts without being marked good, but it stays: The previous build (\(p)) cannot read the data the current build (\(c)) left, and it cannot be converted back: migration step \"notes-v2\" has neither a revert nor a snapshot to undo it with. Run 'rollbackctl rollback --force' to archive the data and roll back with it empty, or stay on \(c).\n")
        #expect(try t.status().rollback == false)
    }
}
