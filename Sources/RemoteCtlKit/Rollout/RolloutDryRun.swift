#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RollbackCtlKit
import SwitchbackCore
import SwitchbackRemote

/// `rollout --dry-run`: the same `RolloutRun` against a copy of the state and directive files
/// in memory, a clock that does not wait and a judge that sends no query and passes every
/// pause. It prints the steps and each directive it would publish, approvals assumed given,
/// then the rollback a failed pause would publish; it writes nothing.
struct RolloutDryRun {
    let plan: RolloutPlan
    let appID: String
    let signer: DirectiveSigner
    let files: RolloutDiskFiles
    let clock: any RolloutClock
    /// The judge the real run would use: only checked to exist, never asked.
    let judge: any RolloutJudge
    let directiveName: String
    let statePath: String
    let console: Console

    func run(approve: Bool, abort: Bool) throws(CommandError) {
        let memory = MemoryFiles(state: try files.readState(), directive: try files.readDirective())
        let start = clock.nowMilliseconds()
        let fake = FakeClock(now: start)
        let real = console
        let printer = Console(writeOut: { real.out("[dry run] " + $0) }, writeError: { real.error($0) })
        var run = RolloutRun(plan: plan, appID: appID, signer: signer, files: memory, clock: fake,
                             judge: DryRunJudge(plan: plan, clock: fake), directiveName: directiveName, console: printer)
        run.showsDirectives = true
        var approved = approve
        // Each gate an operator would open is opened here, once, and said so.
        for _ in 0...(plan.steps.count * 2 + 2) {
            do throws(CommandError) {
                try run.run(approve: approved, abort: abort)
                break
            } catch where error.code == .waiting {
                printer.out(error.message)
                printer.out("(assuming the operator runs it again with --approve)")
                approved = true
            } catch {
                printer.out("Error: \(error.message)")
                break
            }
        }
        // What a failed pause publishes instead: the rollback, shown for the first step.
        let last = memory.state.flatMap { try? RolloutState.parse($0, file: statePath) }?.serial ?? UInt64(start / 1000)
        var failing = RolloutMachine(plan: plan, state: RolloutState(version: plan.version, steps: plan.steps, step: 1, phase: .analysing), approve: false)
        if case .publish(let publication) = failing.judged(.failed("(the sentence of the measurement that failed)"), now: start / 1000),
           let json = try? run.directive(publication, serial: last + 1, now: fake.nowMilliseconds()).jsonData() {
            printer.out("A failed pause publishes a rollback instead (a serial above the last); at step 1:")
            printer.out("    " + String(decoding: json, as: UTF8.self))
        }
        printer.out("Nothing was written: \(directiveName) and \(statePath) are as they were.")
    }
}

/// State and directive files in memory: the dry run's copy of the real ones.
final class MemoryFiles: RolloutFiles, @unchecked Sendable {
    var state: [UInt8]?
    var directive: [UInt8]?

    init(state: [UInt8]? = nil, directive: [UInt8]? = nil) {
        self.state = state
        self.directive = directive
    }

    func readState() throws(CommandError) -> [UInt8]? { state }
    func writeState(_ bytes: [UInt8]) throws(CommandError) { state = bytes }
    func readDirective() throws(CommandError) -> [UInt8]? { directive }
    func writeDirective(_ bytes: [UInt8]) throws(CommandError) { directive = bytes }
    func writeMeasurements(_ bytes: [UInt8]) {}
    /// The copy is this process's own: no other process can hold its locks.
    func lockRun() throws(CommandError) -> String? { nil }
    func unlockRun() {}
    func lockPublication() throws(CommandError) {}
    func unlockPublication() {}
}

/// A clock that jumps to each deadline instead of sleeping.
final class FakeClock: RolloutClock, @unchecked Sendable {
    var now: Int64
    init(now: Int64) { self.now = now }
    func nowMilliseconds() -> Int64 { now }
    func sleep(until deadline: Int64) { now = max(now, deadline) }
}

/// The dry run's judge: says what each check would query, sends nothing, passes.
struct DryRunJudge: RolloutJudge {
    let plan: RolloutPlan
    let clock: FakeClock

    func judge(step: Int, percent: Int, until deadline: Int64, report: @escaping @Sendable (RolloutJudgeReport) -> Void) -> AnalysisVerdict {
        for check in plan.spec?.checks ?? [] {
            guard case .prometheus(let prometheus) = check.kind else { continue }
            var conditions: [String] = []
            if let success = prometheus.success { conditions.append("success when \(success.text)") }
            if let failure = prometheus.failure { conditions.append("failure when \(failure.text)") }
            report(.note("\(check.name): would query \(prometheus.address) every \(check.intervalMilliseconds / 1000) s: \(prometheus.query(substituting: plan.variableValues))\(conditions.isEmpty ? "" : "; " + conditions.joined(separator: ", "))"))
        }
        clock.sleep(until: deadline)
        return .passed("dry run: no query sent, assumed to pass")
    }
}
