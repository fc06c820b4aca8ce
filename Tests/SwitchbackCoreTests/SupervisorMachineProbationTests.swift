#if canImport(Glibc)
import Glibc
#endif
@testable import SwitchbackCore
import SwitchbackFiles
import Testing

/// The probation (bake window) in `SupervisorMachine`: when it starts, resumes and stops, and
/// what each verdict, app signal and operator request does. No process, no clock.
extension SupervisorMachineTests {
    /// 2_000_000_000 s after the epoch plus `seconds`, in milliseconds: `at(_:)`'s Unix clock.
    static func unixMilliseconds(_ seconds: Double) -> Int64 { (1_800_000_000 + Int64(seconds)) * 1000 }

    /// A machine with a 60 s bake window whose first child (pid 100, current, build "cur")
    /// became ready at 0.1 s; returns the actions of that tick too.
    static func onProbation(window: Int = 60, resumable: ProbationRecord? = nil, listeners: Bool = false) -> (Machine, [Machine.Action]) {
        var machine = machine(listeners: listeners)
        machine.bakeWindowSeconds = window
        machine.resumable = resumable
        _ = machine.handle(.start, at: at(0))
        _ = machine.handle(.spawned(.first, pid: 100, intendedSlot: .current, goodBuilds: []), at: at(0))
        _ = machine.handle(.reported(pid: 100, slot: .current, build: "cur"), at: at(0))
        _ = machine.handle(.saidReady(pid: 100), at: at(0.1))
        let actions = machine.handle(.tick, at: at(0.1))
        return (machine, actions)
    }

    static var baking: ProbationRecord {
        ProbationRecord(slot: .current, version: "1.3.0", build: "cur", startedAt: unixMilliseconds(0), endsAt: unixMilliseconds(60))
    }

    @Test func aFirstReadyChildGoesOnProbation() {
        let (machine, actions) = Self.onProbation()
        let record = Self.baking
        #expect(actions.contains(.recordProbation(record)) && actions.contains(.startAnalyzer(record)))
        #expect(Self.said(actions).contains("the current build (1.3.0) is on probation for 60 s."))
        #expect(machine.probation == .analyzing(record, overdueAt: 0.1 + 60 + Machine.verdictGraceSeconds))
        #expect(machine.nextDeadline == 0.1 + 60 + Machine.verdictGraceSeconds)
    }

    @Test func noBakeWindowNoProbation() {
        let (machine, actions) = Self.onProbation(window: 0)
        #expect(!actions.contains { if case .startAnalyzer = $0 { return true } else { return false } })
        #expect(machine.probation == .none)
    }

    @Test func aRestartOfTheSameBuildKeepsTheProbationRunning() {
        var (machine, _) = Self.onProbation()
        _ = machine.handle(.exited(pid: 100, .killed(signal: SIGSEGV)), at: Self.at(5))
        _ = machine.handle(.tick, at: Self.at(6))
        _ = machine.handle(.spawned(.restart, pid: 101, intendedSlot: .current, goodBuilds: ["cur"]), at: Self.at(6))
        _ = machine.handle(.reported(pid: 101, slot: .current, build: "cur"), at: Self.at(6))
        _ = machine.handle(.saidReady(pid: 101), at: Self.at(6.1))
        let actions = machine.handle(.tick, at: Self.at(6.1))
        #expect(!actions.contains(.stopAnalyzer))
        #expect(!actions.contains { if case .startAnalyzer = $0 { return true } else { return false } })
        #expect(machine.probation.record == Self.baking)
    }

    @Test func aSwitchMidWindowStopsTheOldAnalysisAndStartsTheNewBuilds() {
        var (machine, _) = Self.onProbation(listeners: true)
        _ = machine.handle(.choiceSelects(.previous), at: Self.at(10))
        _ = machine.handle(.spawned(.candidate(.previous), pid: 200, intendedSlot: .previous, goodBuilds: []), at: Self.at(10))
        _ = machine.handle(.reported(pid: 200, slot: .previous, build: "prev"), at: Self.at(10))
        _ = machine.handle(.saidReady(pid: 200), at: Self.at(11))
        let actions = machine.handle(.tick, at: Self.at(11))
        var old = Self.baking
        old.state = .inconclusive
        old.result = "the previous slot (pid 200) (1.2.0) started before the window of the current build (1.3.0) ended"
        let new = ProbationRecord(slot: .previous, version: "1.2.0", build: "prev", startedAt: Self.unixMilliseconds(11), endsAt: Self.unixMilliseconds(71))
        let stop = actions.firstIndex(of: .stopAnalyzer), start = actions.firstIndex(of: .startAnalyzer(new))
        #expect(stop != nil && start != nil && stop! < start!)
        #expect(actions.contains(.recordProbation(old)) && actions.contains(.recordProbation(new)))
        #expect(machine.probation.record == new)
    }

    @Test func measurementsAreRecordedPerCheck() {
        var (machine, _) = Self.onProbation()
        let actions = machine.handle(.analysisMeasured(check: "http", phase: "successful", sentence: "http: 0% of 10 probes failed"), at: Self.at(10))
        var record = Self.baking
        record.checks = [.init(name: "http", phase: "successful", sentence: "http: 0% of 10 probes failed", at: Self.unixMilliseconds(10))]
        #expect(actions == [.recordProbation(record)])
    }

    @Test func aPassedWindowMarksTheBuildGoodWithTheNote() {
        var (machine, _) = Self.onProbation()
        let actions = machine.handle(.analysisVerdict(.passed("every check passed")), at: Self.at(60))
        var record = Self.baking
        record.state = .passed
        record.result = "every check passed"
        #expect(actions.contains(.recordProbation(record)))
        #expect(actions.contains(.markGoodAfterProbation(slot: .current, build: "cur", note: "passed its 60 s bake window")))
        #expect(actions.contains(.recordHistory(.probationPassed, from: .current, to: .current,
                                                reason: "the current build (1.3.0) passed its 60 s bake window: every check passed")))
        #expect(machine.probation == .judged(record) && machine.nextDeadline == nil)
        // A second verdict is not acted on.
        #expect(machine.handle(.analysisVerdict(.failed("late")), at: Self.at(61)) == [])
    }

    @Test func aFailedWindowTakesTheCrashLoopPathWithTheMeasurement() {
        var (machine, _) = Self.onProbation()
        let sentence = "http: 31% of 58 probes failed (limit 5%) over 60 s"
        let actions = machine.handle(.analysisVerdict(.failed(sentence)), at: Self.at(30))
        #expect(actions.contains(.markBad(slot: .current, build: "cur", why: "failed its 60 s bake window: \(sentence)")))
        #expect(actions.contains(.recordHistory(.probationFailed, from: .current, to: .current,
                                                reason: "the current build (1.3.0) failed its 60 s bake window: \(sentence)")))
        #expect(machine.probation.record?.state == .failed)
    }

    @Test func anInconclusiveWindowNeverRollsBackAndWaitsForTheOperator() {
        var (machine, _) = Self.onProbation()
        let sentence = "errors: Prometheus at http://127.0.0.1:9090 could not be reached (connection refused)"
        let actions = machine.handle(.analysisVerdict(.inconclusive(sentence)), at: Self.at(60))
        #expect(!actions.contains { if case .markBad = $0 { return true } else { return false } })
        #expect(Self.said(actions).first?.contains("run rollbackctl promote to keep it or rollbackctl abort") == true)
        #expect(machine.probation.record?.state == .inconclusive)
        // The operator promotes it: no analyzer to stop, marked good.
        let promoted = machine.handle(.probationRequest(.promote(build: "cur")), at: Self.at(70))
        #expect(!promoted.contains(.stopAnalyzer))
        #expect(promoted.contains(.markGoodAfterProbation(slot: .current, build: "cur", note: "promoted by the operator during its bake window")))
        #expect(machine.probation.record?.state == .promoted)
        // Closed now: another request is ignored.
        let again = machine.handle(.probationRequest(.abort(build: "cur")), at: Self.at(71))
        #expect(Self.said(again) == ["a probation request for build cur was ignored: no probation of that build is open."])
    }

    @Test func aHeldWindowKeepsTheBuildUntilTheOperatorAborts() {
        var (machine, _) = Self.onProbation()
        let sentence = "http: p99 latency 412 ms over 58 probes (limit 250 ms) (on_failure=hold)"
        let actions = machine.handle(.analysisVerdict(.held(sentence)), at: Self.at(30))
        #expect(!actions.contains { if case .markBad = $0 { return true } else { return false } })
        #expect(actions.contains(.recordHistory(.probationHeld, from: .current, to: .current,
                                                reason: "the current build (1.3.0) is held by its 60 s bake window: \(sentence)")))
        #expect(Self.said(actions) == ["The current build (1.3.0) is held by its 60 s bake window: \(sentence); it stays: run rollbackctl promote to keep it or rollbackctl abort to roll it back."])
        #expect(machine.probation.record?.state == .held && machine.probation.record?.result == sentence)
        let aborted = machine.handle(.probationRequest(.abort(build: "cur")), at: Self.at(40))
        #expect(aborted.contains { if case .markBad(_, "cur", _, .cli) = $0 { return true } else { return false } }, "\(aborted)")
        #expect(machine.probation.record?.state == .aborted)
    }

    @Test func aDryRunsVerdictActsOnNothing() {
        var (machine, _) = Self.onProbation()
        let sentence = "would have rolled back: http: 31% of 58 probes failed (limit 5%) over 30 s"
        let actions = machine.handle(.analysisVerdict(.wouldRollBack(sentence)), at: Self.at(30))
        #expect(!actions.contains { if case .markBad = $0 { return true } else { return false } })
        let reason = "the current build (1.3.0) ended its 60 s bake window, a dry run: \(sentence)"
        #expect(actions.contains(.recordHistory(.probationWouldRollBack, from: .current, to: .current, reason: reason)))
        #expect(actions.contains(.markGoodAfterProbation(slot: .current, build: "cur", note: "ended its 60 s bake window, a dry run that \(sentence)")))
        #expect(Self.said(actions) == ["The current build (1.3.0) ended its 60 s bake window, a dry run: \(sentence); nothing was done, it stays."])
        #expect(machine.probation.record?.state == .wouldRollBack)
        let promote = machine.handle(.probationRequest(.promote(build: "cur")), at: Self.at(31))
        #expect(Self.said(promote) == ["a probation request for build cur was ignored: no probation of that build is open."], "a dry run's window is closed")
        var (holding, _) = Self.onProbation()
        let held = holding.handle(.analysisVerdict(.wouldHold("would have held: errors: y")), at: Self.at(30))
        #expect(held.contains { if case .recordHistory(.probationWouldHold, _, _, _, _) = $0 { return true } else { return false } })
        #expect(holding.probation.record?.state == .wouldHold)
    }

    @Test func anAnalyzerThatDiesOrNeverStartsIsInconclusive() {
        var (machine, _) = Self.onProbation()
        let actions = machine.handle(.analyzerExited("no analyzer ran: the rollbackctl-remote program is missing"), at: Self.at(1))
        #expect(!actions.contains { if case .markBad = $0 { return true } else { return false } })
        #expect(machine.probation.record?.state == .inconclusive)
        #expect(machine.probation.record?.result == "no analyzer ran: the rollbackctl-remote program is missing")
    }

    @Test func anOverdueAnalyzerIsStoppedAndTheWindowIsInconclusive() {
        var (machine, _) = Self.onProbation()
        #expect(machine.handle(.tick, at: Self.at(70)) == [])
        let actions = machine.handle(.tick, at: Self.at(0.1 + 60 + Machine.verdictGraceSeconds))
        #expect(actions.first == .stopAnalyzer)
        #expect(machine.probation.record?.result == "the analyzer gave no verdict by the end of the window")
    }

    @Test func abortStopsTheAnalyzerAndMarksTheBuildBad() {
        var (machine, _) = Self.onProbation()
        let actions = machine.handle(.probationRequest(.abort(build: "cur")), at: Self.at(5))
        #expect(actions.first == .stopAnalyzer)
        #expect(actions.contains(.markBad(slot: .current, build: "cur", why: "was aborted by the operator during its bake window (rollbackctl abort)", by: .cli)))
        #expect(actions.contains(.recordHistory(.probationAborted, from: .current, to: .current,
                                                reason: "the current build (1.3.0) was aborted by the operator (rollbackctl abort)", source: .cli)))
        #expect(machine.probation.record?.state == .aborted)
    }

    @Test func aRequestForAnotherBuildIsIgnored() {
        var (machine, _) = Self.onProbation()
        let actions = machine.handle(.probationRequest(.promote(build: "other")), at: Self.at(5))
        #expect(Self.said(actions) == ["a probation request for build other was ignored: no probation of that build is open."])
        #expect(machine.probation.record?.state == .baking)
    }

    @Test func theAppsSignalsReachTheAnalyzerOnlyFromTheBuildOnProbation() {
        var (machine, _) = Self.onProbation()
        #expect(machine.handle(.appFailures(pid: 100, count: 3), at: Self.at(5)) == [.tellAnalyzer(.appFailures(3))])
        #expect(machine.handle(.appBad(pid: 100, reason: "schema mismatch"), at: Self.at(5)) == [.tellAnalyzer(.appBad(reason: OutsideText("schema mismatch")))])
        #expect(machine.handle(.appFailures(pid: 999, count: 3), at: Self.at(5)) == [])
        _ = machine.handle(.analysisVerdict(.passed("ok")), at: Self.at(60))
        #expect(machine.handle(.appFailures(pid: 100, count: 4), at: Self.at(61)) == [])
    }

    @Test func aSupervisorRestartedDuringTheWindowResumesIt() {
        var record = Self.baking
        record.startedAt = Self.unixMilliseconds(-30)
        record.endsAt = Self.unixMilliseconds(30)
        let (machine, actions) = Self.onProbation(resumable: record)
        #expect(actions.contains(.startAnalyzer(record)))
        #expect(!actions.contains(.recordProbation(record)))
        #expect(Self.said(actions).contains("the current build (1.3.0) resumes its bake window: 30 s left."))
        #expect(machine.probation.record == record)
    }

    @Test func aJudgedBuildIsNotPutOnProbationAgainAfterASupervisorRestart() {
        var record = Self.baking
        record.state = .passed
        let (machine, actions) = Self.onProbation(resumable: record)
        #expect(!actions.contains { if case .startAnalyzer = $0 { return true } else { return false } })
        #expect(machine.probation == .judged(record))
    }

    @Test func aRecordOfAnotherBuildStartsANewProbation() {
        var record = Self.baking
        record.build = "older"
        record.state = .passed
        let (machine, actions) = Self.onProbation(resumable: record)
        #expect(actions.contains(.startAnalyzer(Self.baking)))
        #expect(machine.resumable == nil)
    }

    @Test func aRequestLineReadsOrIsRefused() {
        #expect(Machine.ProbationRequest(line: "promote abc\n") == .promote(build: "abc"))
        #expect(Machine.ProbationRequest(line: "abort abc") == .abort(build: "abc"))
        #expect(Machine.ProbationRequest(line: "promote") == nil)
        #expect(Machine.ProbationRequest(line: "keep abc") == nil)
    }
}

/// The probation record's file: round trip, and damage that is refused with a sentence.
@Suite struct ProbationRecordTests {
    static let build = String(repeating: "ab", count: 32)

    @Test func roundTrips() throws {
        var record = ProbationRecord(slot: .current, version: "1.3.0", build: Self.build, startedAt: 1_800_000_000_000, endsAt: 1_800_000_060_000,
                                     state: .failed, result: "http: 31% of 58 probes failed (limit 5%) over 60 s")
        record.update(.init(name: "http", phase: "failed", sentence: "http: 31% of 58 probes failed (limit 5%) over 60 s", at: 1_800_000_030_000))
        record.update(.init(name: "app", phase: "successful", sentence: "app: 0 failures reported (limit 10)", at: 1_800_000_031_000))
        let parsed = try ProbationRecord.parse(record.serialized(), path: "/x/probation")
        #expect(parsed == record)
        #expect(parsed.windowSeconds == 60)
    }

    @Test(arguments: [
        ("format=2\n", "is not format 1"),
        ("format=1\nslot=sideways\n", "names no slot"),
        ("format=1\nslot=current\nbuild=abc\n", "has no build SHA-256"),
        ("format=1\nslot=current\nbuild=\(String(repeating: "ab", count: 32))\nstate=baking\nstarted_at=5\nends_at=x\n", "has no valid ends_at"),
        ("format=1\nslot=current\nbuild=\(String(repeating: "ab", count: 32))\nstate=baking\nstarted_at=9\nends_at=5\n", "ends before it started"),
        ("\u{0}\u{1}garbage", "probation record"),
    ])
    func damageIsRefusedWithASentence(text: String, says: String) {
        #expect(throws: SwitchbackError.self) { try ProbationRecord.parse(Array(text.utf8), path: "/x/probation") }
        do { _ = try ProbationRecord.parse(Array(text.utf8), path: "/x/probation") } catch {
            #expect(error.code == .stateInvalid || error.message.contains("probation record"))
            #expect(error.message.contains(says))
        }
    }

    @Test func unreadableCheckLinesAreSkipped() throws {
        let text = "format=1\nslot=previous\nbuild=\(Self.build)\nstate=inconclusive\nstarted_at=1\nends_at=2\ncheck.=x\ncheck.http=error\ncheck.http.at=zz\n"
        let record = try ProbationRecord.parse(Array(text.utf8), path: "/x/probation")
        #expect(record.checks == [.init(name: "http", phase: "error", sentence: "", at: 0)])
    }
}
