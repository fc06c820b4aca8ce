#if canImport(FoundationEssentials)
import SwitchbackCore
import FoundationEssentials
#else
import Foundation
#endif
@testable import RemoteCtlKit
@testable import RollbackCtlKit
import SwitchbackCrypto
import SwitchbackRemote
import Testing

/// The rollout's driver against files in memory, a clock that does not wait and a scripted
/// judge: what it writes, in which order, and what a crash at each write leaves for the next
/// run. The signatures are real (a fresh Ed25519 key).
@Suite struct RolloutRunTests {
    /// Files in memory that record every write and can fail one, as a `kill -9` would stop
    /// the process at that point.
    final class RecordingFiles: RolloutFiles, @unchecked Sendable {
        var state: [UInt8]?
        var directive: [UInt8]?
        /// Every write, in order: "state PHASE" or "directive SERIAL".
        var log: [String] = []
        /// The write (counted from 1 over both files) that fails instead of happening.
        var crashAt: Int?
        private(set) var writes = 0
        /// The locks, as two processes sharing the files see them: the run lock's holder, and
        /// whether the publication lock is held (a run must release it during its pauses).
        var runHolder: String?
        var isPublishing = false

        func readState() throws(CommandError) -> [UInt8]? { state }
        func readDirective() throws(CommandError) -> [UInt8]? { directive }
        /// The last measurements file written during a pause.
        var measurements: [UInt8]?
        func writeMeasurements(_ bytes: [UInt8]) { measurements = bytes }

        func lockRun() throws(CommandError) -> String? {
            if let runHolder { return runHolder }
            runHolder = "pid 4242"
            return nil
        }
        func unlockRun() { runHolder = nil }
        func lockPublication() throws(CommandError) {
            if isPublishing { throw .failure("the publication lock is held") }
            isPublishing = true
        }
        func unlockPublication() { isPublishing = false }

        func writeState(_ bytes: [UInt8]) throws(CommandError) {
            try crashIfDue()
            state = bytes
            log.append("state " + ((try? RolloutState.parse(bytes, file: "s"))?.phase.rawValue ?? "?"))
        }

        func writeDirective(_ bytes: [UInt8]) throws(CommandError) {
            try crashIfDue()
            directive = bytes
            log.append("directive \(RolloutRun.serial(of: bytes).map(String.init) ?? "?")")
        }

        private func crashIfDue() throws(CommandError) {
            writes += 1
            if writes == crashAt { throw .failure("killed") }
        }

        /// The directive on disk.
        var published: Directive? {
            guard let directive, let envelope = try? JSONDecoder().decode(DirectiveEnvelope.self, from: Data(directive)),
                  let payload = Data(base64Encoded: envelope.payload) else { return nil }
            return try? JSONDecoder().decode(Directive.self, from: payload)
        }
    }

    /// Returns the verdicts in order, one per pause; passed when they run out. `during`
    /// runs in the middle of a pause, as another process would (an --abort from another shell).
    final class ScriptedJudge: RolloutJudge, @unchecked Sendable {
        var verdicts: [AnalysisVerdict]
        var judged: [Int] = []
        var during: ((Int) -> Void)?
        let clock: FakeClock
        init(_ verdicts: [AnalysisVerdict], clock: FakeClock) {
            self.verdicts = verdicts
            self.clock = clock
        }
        func judge(step: Int, percent: Int, until deadline: Int64, report: @escaping @Sendable (RolloutJudgeReport) -> Void) -> AnalysisVerdict {
            judged.append(percent)
            report(.measurement(Measurement(check: "errors", phase: .successful, detail: "measured for \(percent)%")))
            during?(percent)
            clock.sleep(until: deadline)
            return verdicts.isEmpty ? .passed("fine") : verdicts.removeFirst()
        }
    }

    final class Lines: @unchecked Sendable {
        var out: [String] = []
    }

    static let plan = RolloutPlan(version: "1.3.0", steps: [5, 50, 100], pauses: [30, 30, 30], approvalSteps: [], expiresInSeconds: 3600,
                                  appID: "dev.example", previousVersion: "1.2.0", analysis: [:])
    static let signer = DirectiveSigner(privateKey: try! Ed25519PrivateKey.generate())

    struct Harness {
        let files = RecordingFiles()
        let clock = FakeClock(now: 1_800_000_000_000)
        let lines = Lines()
        var judge: ScriptedJudge

        init(_ verdicts: [AnalysisVerdict] = []) {
            judge = ScriptedJudge(verdicts, clock: clock)
        }

        func run(approve: Bool = false, abort: Bool = false, plan: RolloutPlan = RolloutRunTests.plan) throws(CommandError) {
            let lines = self.lines
            let console = Console(writeOut: { lines.out.append($0) }, writeError: { lines.out.append("stderr: " + $0) })
            try RolloutRun(plan: plan, appID: "dev.example", signer: RolloutRunTests.signer, files: files, clock: clock, judge: judge,
                           directiveName: "www/directive.json", console: console).run(approve: approve, abort: abort)
        }
    }

    @Test func theStateIsWrittenBeforeAndAfterEachPublication() throws {
        let h = Harness()
        try h.run()
        #expect(h.files.log.filter { $0.hasPrefix("directive") }.count == 3)
        // Each directive write sits between a "publishing" and an "analysing" state write.
        for (index, entry) in h.files.log.enumerated() where entry.hasPrefix("directive") {
            #expect(h.files.log[index - 1] == "state publishing")
            #expect(h.files.log[index + 1] == "state analysing")
        }
        #expect(h.files.log.last == "state completed")
        let directive = try #require(h.files.published)
        #expect(directive.decision == .runCurrent && directive.rolloutPercent == 100 && directive.appliesTo == ["1.3.0"])
        #expect(directive.expiresAt.timeIntervalSince(directive.issuedAt) == 3600)
        #expect(h.judge.judged == [5, 50, 100])
        #expect(h.lines.out.contains("  errors successful: measured for 50%"))
        #expect(h.lines.out.last == "The rollout of 1.3.0 is complete: its last directive (serial \(directive.serial)) was published for every install (100%); its last pause measured: passed: fine.")
        // The serials go up, one per publication, from the time in seconds.
        let serials = try RolloutState.parse(try #require(h.files.state), file: "s").records.keys.sorted().map {
            try! RolloutState.parse(h.files.state!, file: "s").records[$0]!.serial
        }
        #expect(serials.count == 3 && serials[0] >= 1_800_000_000 && serials == serials.sorted() && Set(serials).count == 3)
    }

    /// In the middle of a pause, what `rollout-status` reads says where the rollout is: the
    /// step, the time left, the check's last measurement, the earlier steps' results.
    @Test func aPauseLeavesWhatRolloutStatusShows() throws {
        var h = Harness()
        final class Seen: @unchecked Sendable { var lines: [[String]] = [] }
        let seen = Seen()
        let files = h.files, clock = h.clock
        h.judge.during = { _ in
            guard let bytes = files.state, let state = try? RolloutState.parse(bytes, file: "s") else { return }
            let checks = files.measurements.flatMap(RolloutCheckFile.parse)
            seen.lines.append(RolloutStatusCommand.lines(state, checks: checks, holder: 4242, now: clock.nowMilliseconds() + 10_000))
        }
        try h.run()
        try #require(seen.lines.count == 3)
        let second = seen.lines[1]
        #expect(second[0].hasPrefix("Rollout of 1.3.0: step 2 of 3 (50%) (directive serial "), "\(second)")
        #expect(second[0].hasSuffix(": 20 s left of its pause (until 08:01:00 UTC)."), "\(second)")
        #expect(second[1] == "  errors: successful: errors: measured for 50% (08:00:30 UTC)", "\(second)")
        #expect(second[2].hasPrefix("Step 1 of 3 (5%): serial 1800000000, published ") && second[2].hasSuffix(": passed: fine."), "\(second)")
        #expect(second.last == "A rollout process (pid 4242) holds the state file.")
    }

    @Test func aFailedStepPublishesTheRollbackAndSaysWhatItMeasured() throws {
        let h = Harness([.failed("errors: result[0] < 0.05 is false (0.31)")])
        #expect(throws: CommandError(.rolledBack, "The rollout of 1.3.0 stopped at step 1 of 3 (5%) and was rolled back for every install (directive serial \(1_800_000_030)): errors: result[0] < 0.05 is false (0.31).")) {
            try h.run()
        }
        let directive = try #require(h.files.published)
        #expect(directive.decision == .runPrevious && directive.rolloutPercent == 100 && directive.appliesTo == ["1.3.0"])
        #expect(directive.reason == "Rollout of 1.3.0 rolled back at step 1 of 3 (5%): errors: result[0] < 0.05 is false (0.31)")
        #expect(h.lines.out.contains("Step 1 of 3 (5%): analysis failed: errors: result[0] < 0.05 is false (0.31); rolling back."))
        #expect(h.files.log == ["state ready", "state publishing", "directive 1800000000", "state analysing", "state rolling_back",
                                "state rolling_back", "directive 1800000030", "state rolled_back"])
    }

    /// A kill at every write of a rollout, then a re-run: each step's directive is written
    /// exactly once in all, with its serial, and the rollout completes.
    @Test(arguments: 1...13)
    func aKillAtAnyWriteResumesWithoutASecondPublication(crashAt: Int) throws {
        let h = Harness()
        h.files.crashAt = crashAt
        #expect(throws: CommandError.failure("killed")) { try h.run() }
        h.files.crashAt = nil
        try h.run()
        let directives = h.files.log.filter { $0.hasPrefix("directive") }
        #expect(directives.count == 3, "\(h.files.log)")
        #expect(Set(directives).count == 3, "no serial written twice: \(h.files.log)")
        #expect(try RolloutState.parse(try #require(h.files.state), file: "s").phase == .completed)
    }

    @Test func anApprovalStepWaitsUntilApproved() throws {
        var plan = Self.plan
        plan.approvalSteps = [50]
        let h = Harness()
        #expect(throws: CommandError(.waiting, "Waiting for approval: step 2 of 3 (50%) is published only once an operator approves it; run the same command with --approve to publish it, or with --abort to roll back.")) {
            try h.run(plan: plan)
        }
        #expect(h.files.published?.rolloutPercent == 5)
        #expect(throws: CommandError.self) { try h.run(plan: plan) }
        #expect(h.files.published?.rolloutPercent == 5, "still waiting")
        try h.run(approve: true, plan: plan)
        #expect(h.files.published?.rolloutPercent == 100)
    }

    @Test func aStateFileOfAnotherRolloutIsRefused() throws {
        let h = Harness()
        try h.run()
        var other = Self.plan
        other.version = "1.4.0"
        #expect(throws: CommandError.failure("The rollout state file (state) is of a rollout of 1.3.0 in steps 5%, 50%, 100%, not of this plan's 1.4.0 in steps 5%, 50%, 100%; give that rollout's plan, or another --state file for a new rollout.")) {
            try h.run(plan: other)
        }
    }

    @Test func aDirectiveFilePublishedByHandKeepsTheSerialsGoingUp() throws {
        let h = Harness()
        // A directive with a serial far above the time, already served.
        let manual = Directive(appID: "dev.example", serial: 5_000_000_000, issuedAt: Date(timeIntervalSince1970: 1_800_000_000),
                               expiresAt: Date(timeIntervalSince1970: 1_900_000_000), decision: .runPrevious, appliesTo: ["1.3.0"],
                               reason: "held")
        h.files.directive = Array(try Self.signer.sign(manual))
        try h.run()
        #expect(h.files.log.filter { $0.hasPrefix("directive") } == ["directive 5000000001", "directive 5000000002", "directive 5000000003"])
    }

    /// The runs of the tests below: the same files, the same clock, another console, as
    /// another process started from another shell would be.
    func other(_ h: Harness, abort: Bool = true) -> (run: () throws(CommandError) -> Void, lines: Lines) {
        let lines = Lines()
        let console = Console(writeOut: { lines.out.append($0) }, writeError: { lines.out.append("stderr: " + $0) })
        let judge = ScriptedJudge([], clock: h.clock)
        return ({ () throws(CommandError) in
            try RolloutRun(plan: Self.plan, appID: "dev.example", signer: Self.signer, files: h.files, clock: h.clock, judge: judge,
                           directiveName: "www/directive.json", console: console).run(approve: false, abort: abort)
        }, lines)
    }

    /// A second run while one runs refuses in one sentence, and touches nothing.
    @Test func aSecondRunRefusesWhileOneRuns() throws {
        let h = Harness()
        var refusal: CommandError?
        var log: [String] = []
        h.judge.during = { [self] percent in
            guard percent == 5 else { return }
            log = h.files.log
            do throws(CommandError) { try other(h, abort: false).run() } catch { refusal = error }
            #expect(h.files.log == log, "the second run wrote nothing")
        }
        try h.run()
        #expect(refusal == .failure("Another rollbackctl-remote rollout (pid 4242) is running with the state file (state); wait for it to end, or run the same command with --abort to roll back now (which ends that rollout)."))
        #expect(h.files.runHolder == nil, "released at the end")
    }

    /// `--abort` from another process in the middle of step 2's pause: it publishes the
    /// rollback at once (exit 0); the running rollout stops when its pause ends (exit 4,
    /// code .superseded), says why, and writes nothing after it: neither step 3 nor its state.
    @Test func anAbortFromAnotherProcessEndsTheRunningRollout() throws {
        let h = Harness()
        var aborted: Lines?
        var logAtAbort: [String] = []
        h.judge.during = { [self] percent in
            guard percent == 50 else { return }
            let (run, lines) = other(h)
            do { try run() } catch { Issue.record("the abort failed: \(error)") }
            aborted = lines
            logAtAbort = h.files.log
        }
        let error = #expect(throws: CommandError.self) { try h.run() }
        #expect(error?.code == .superseded && error?.exitCode == 4)
        let rollback = try #require(h.files.published)
        #expect(rollback.decision == .runPrevious && rollback.rolloutPercent == 100)
        #expect(error?.message == "The rollout of 1.3.0 was aborted from another process (--abort) during the pause of step 2 of 3 (50%): its rollback (directive serial \(rollback.serial)) stays published, and this run publishes nothing more.")
        #expect(aborted?.out.first == "A rollout is running with the state file (state) (pid 4242): publishing the rollback beside it; it stops, publishing nothing more, when its pause ends.")
        #expect(aborted?.out.last == "Rolled back 1.3.0 for every install (directive serial \(rollback.serial)): aborted by the operator (--abort).")
        #expect(h.files.log == logAtAbort, "nothing written after the abort: \(h.files.log)")
        #expect(h.files.log.filter { $0.hasPrefix("directive") }.count == 3, "steps 1 and 2, and the rollback")
        let state = try RolloutState.parse(try #require(h.files.state), file: "s")
        #expect(state.phase == .rolledBack && state.rollbackCause == .aborted)
        // Run again: the rollout is over.
        #expect(throws: CommandError.self) { try h.run() }
        #expect(h.files.published?.serial == rollback.serial)
    }

    /// A directive published by hand during a pause ends the running rollout the same way.
    @Test func aDirectivePublishedByHandDuringAPauseEndsTheRunningRollout() throws {
        let h = Harness()
        let manual = Directive(appID: "dev.example", serial: 1_800_000_500, issuedAt: Date(timeIntervalSince1970: 1_800_000_000),
                               expiresAt: Date(timeIntervalSince1970: 1_900_000_000), decision: .runPrevious, appliesTo: ["1.3.0"],
                               reason: "held by hand")
        let bytes = Array(try Self.signer.sign(manual))
        var logAtHand: [String] = []
        h.judge.during = { percent in
            guard percent == 5 else { return }
            h.files.directive = bytes
            logAtHand = h.files.log
        }
        let error = #expect(throws: CommandError.self) { try h.run() }
        #expect(error?.code == .superseded)
        #expect(error?.message == "The directive file was replaced during the pause of step 1 of 3 (5%): it holds a directive with serial 1800000500, not this rollout's (serial 1800000000), so someone published by hand; this run publishes nothing more over it or after it: find out who, then run the same command with --abort to roll back, or start a new rollout with another --state file.")
        #expect(h.files.directive == bytes && h.files.log == logAtHand, "nothing written after it: \(h.files.log)")
    }

    /// The aborter killed at each of its writes (state rolling back, decided; state rolling
    /// back, signed; the rollback; state rolled back) while the rollout pauses: killed before
    /// it wrote anything, the abort never happened and the rollout goes on; killed later,
    /// the rollout stops all the same and publishes nothing, and `--abort` run again leaves
    /// exactly one rollback written.
    @Test(arguments: 1...4)
    func anAbortKilledAtAnyWriteStillStopsTheRollout(crashAt: Int) throws {
        let h = Harness()
        var logAtAbort: [String] = []
        h.judge.during = { [self] percent in
            guard percent == 50 else { return }
            h.files.crashAt = h.files.writes + crashAt
            #expect(throws: CommandError.failure("killed")) { try other(h).run() }
            h.files.crashAt = nil
            logAtAbort = h.files.log
        }
        if crashAt == 1 {
            try h.run()
            #expect(h.files.published?.rolloutPercent == 100 && h.files.published?.decision == .runCurrent)
            return
        }
        let error = #expect(throws: CommandError.self) { try h.run() }
        #expect(error?.code == .superseded, "\(String(describing: error))")
        #expect(h.files.log == logAtAbort, "nothing written after the abort: \(h.files.log)")
        try other(h).run()
        let rollbacks = h.files.log.filter { $0.hasPrefix("directive") }.dropFirst(2)
        #expect(rollbacks.count == 1, "\(h.files.log)")
        #expect(h.files.published?.decision == .runPrevious)
        #expect(try RolloutState.parse(try #require(h.files.state), file: "s").phase == .rolledBack)
    }

    /// A progress file with a serial near Int64.max is refused before anything is published.
    @Test func aProgressFileWithASerialAboveAnyTimeIsRefused() throws {
        let h = Harness()
        var state = RolloutState.fresh(Self.plan)
        state.serial = UInt64(Int64.max) - 1
        state.phase = .ready
        state.step = 2
        h.files.state = state.serialized()
        let error = #expect(throws: CommandError.self) { try h.run() }
        #expect(error?.exitCode == 1)
        #expect(error?.message.hasPrefix("The rollout state file (state) has serial 9223372036854775806, above any time in seconds") == true)
        #expect(h.files.log.isEmpty && h.files.directive == nil)
    }
}
