#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import RollbackCtlKit
import SwitchbackCrypto
import SwitchbackRemote

/// Drives a rollout: performs the actions `RolloutMachine` returns (sign, write the state,
/// write the directive, write the state again, pause and judge), prints what it measured and
/// why it acts, and ends with the machine's last sentence: returned (exit 0), thrown as
/// `.waiting` (exit 3), `.rolledBack` (exit 2) or as a failure (exit 1).
struct RolloutRun {
    let plan: RolloutPlan
    let appID: String
    let signer: DirectiveSigner
    let files: any RolloutFiles & Sendable
    let clock: any RolloutClock & Sendable
    let judge: any RolloutJudge
    /// How the directive file is named in the output (`--out`).
    let directiveName: String
    let console: Console
    /// Whether each published directive is also printed, as JSON (the dry run).
    var showsDirectives = false
    /// The plan's hooks, told of each step (nil: none, or the dry run).
    var hooks: RolloutHooks? = nil

    /// Runs from the state on disk to the next stop. Holds the run lock throughout (a second
    /// run refuses; `--abort` goes on beside a running rollout) and the publication lock
    /// except during pauses; after each pause it re-reads both files before it publishes
    /// or finishes anything, and stops (exit 4) when another process took the directive
    /// over meanwhile.
    func run(approve: Bool, abort: Bool, promoteFull: Bool = false) throws(CommandError) {
        defer { hooks?.finish() }
        let holder = try files.lockRun()
        if let holder, !abort {
            throw .failure("Another rollbackctl-remote rollout (\(holder)) is running with the state file \(stateName); wait for it to end, or run the same command with --abort to roll back now (which ends that rollout).")
        }
        defer { if holder == nil { files.unlockRun() } }
        try files.lockPublication()
        defer { files.unlockPublication() }
        if let holder {
            say("A rollout is running with the state file \(stateName) (\(holder)): publishing the rollback beside it; it stops, publishing nothing more, when its pause ends.")
        }
        let saved = try loadState()
        var machine = RolloutMachine(plan: plan, state: saved, approve: approve, promoteFull: promoteFull)
        if let saved {
            say("Resuming the rollout of \(plan.version) at \(machine.stepName), \(saved.phase.rawValue.replacingEvery("_", with: " ")).")
        } else {
            say("Rollout of \(plan.version) for \(appID): steps \(plan.stepsSummary); \(plan.pausesSummary), \(judgeSummary); directives to \(directiveName).")
        }
        var action = machine.resume(onDisk: try onDisk(), abort: abort, now: nowSeconds)
        while true {
            flushNotes(&machine)
            // A pause's end goes into the state written just below (`rollout-status` reads it).
            if case .analyse(_, _, let seconds, _) = action {
                machine.pauseStarted(endsAt: clock.nowMilliseconds() + Int64(seconds) * 1000)
            }
            // Superseded: the state on disk is the other process's (or the one this run
            // last wrote, for a directive published by hand); it is not written again.
            if case .superseded = action {} else { try save(machine.state) }
            switch action {
            case .publish(let publication):
                action = try publish(publication, machine: &machine, abort: abort)
            case .analyse(let step, let percent, let seconds, _):
                let deadline = machine.state.pauseEndsAt ?? clock.nowMilliseconds() + Int64(seconds) * 1000
                say("\(machine.stepName.capitalizedFirst): pausing \(seconds) s while the analysis runs (until \(Self.clockTime(deadline))).")
                let console = self.console, clock = self.clock
                let checks = RolloutCheckFile(step: step, files: files)
                files.unlockPublication()
                let verdict = judge.judge(step: step, percent: percent, until: deadline) { report in
                    console.out("  " + report.line)
                    fflush(nil)
                    if case .measurement(let measurement) = report { checks.record(measurement, at: clock.nowMilliseconds()) }
                }
                try files.lockPublication()
                // Before anything more is published or said: what the files hold now.
                let directive = try onDisk()
                hooks?.tell(.judged, step: step, serial: machine.state.serial, result: "\(verdict.word): \(verdict.sentence)", now: nowSeconds)
                action = machine.pauseEnded(verdict, onDisk: directive, saved: try loadState(), now: nowSeconds)
            case .wait(let sentence):
                hooks?.tell(.waiting, step: machine.state.step, serial: machine.state.serial, result: sentence, now: nowSeconds)
                throw CommandError(.waiting, sentence)
            case .finish(let sentence):
                say(sentence)
                hooks?.tell(machine.state.phase == .rolledBack ? .rolledBack : .completed, step: machine.state.step,
                            serial: machine.state.serial, result: sentence, now: nowSeconds)
                return
            case .fail(let sentence):
                throw .failure(sentence)
            case .rolledBack(let sentence):
                hooks?.tell(.rolledBack, step: machine.state.step, serial: machine.state.serial, result: sentence, now: nowSeconds)
                throw CommandError(.rolledBack, sentence)
            case .superseded(let sentence):
                throw CommandError(.superseded, sentence)
            }
        }
    }

    /// Signs `publication`, writes the state (publishing), the directive, then the state again.
    private func publish(_ publication: RolloutMachine.Publication, machine: inout RolloutMachine, abort: Bool) throws(CommandError) -> RolloutMachine.Action {
        let now = clock.nowMilliseconds()
        let serial = publication.serial ?? newSerial(after: machine.state.serial, now: now)
        let directive = self.directive(publication, serial: serial, now: now)
        let bytes: [UInt8]
        do { bytes = Array(try signer.sign(directive)) } catch { throw .failure(String(describing: error)) }
        machine.willPublish(serial: serial, sha256: SHA256.hash(bytes).hexString, now: now / 1000)
        try save(machine.state)
        try files.writeDirective(bytes)
        let next = machine.didPublish(now: clock.nowMilliseconds() / 1000, abort: false)
        say("\(publication.decision == .previous ? "Rollback" : machine.stepName.capitalizedFirst): published directive serial \(serial) (\(directive.decision.summary) on \(plan.version) for \(Self.audience(publication.percent))) to \(directiveName).")
        if publication.decision == .current {
            hooks?.tell(.published, step: machine.state.step, serial: serial, result: publication.reason, now: now / 1000)
        }
        if showsDirectives, let json = try? directive.jsonData() { say("    " + String(decoding: json, as: UTF8.self)) }
        return next
    }

    /// The directive a publication stands for, signed at `now`.
    func directive(_ publication: RolloutMachine.Publication, serial: UInt64, now: Int64) -> Directive {
        let issued = Date(timeIntervalSince1970: Double(now / 1000))
        return Directive(appID: appID, serial: serial, issuedAt: issued,
                         expiresAt: issued.addingTimeInterval(Double(plan.expiresInSeconds)),
                         decision: publication.decision == .current ? .runCurrent : .runPrevious, appliesTo: [plan.version],
                         rolloutPercent: publication.percent, reason: Self.oneLine(publication.reason))
    }

    /// The time in seconds, but above every serial known: the state's and the file's (a
    /// directive published by hand meanwhile), as `sign` does.
    private func newSerial(after known: UInt64, now: Int64) -> UInt64 {
        let onFile = (try? files.readDirective()).flatMap { $0 }.flatMap(Self.serial(of:)) ?? 0
        return max(UInt64(max(0, now / 1000)), known &+ 1, onFile &+ 1)
    }

    private func loadState() throws(CommandError) -> RolloutState? {
        guard let bytes = try files.readState() else { return nil }
        let state: RolloutState
        do { state = try RolloutState.parse(bytes, file: stateName) } catch { throw .failure(error.message) }
        guard state.version == plan.version, state.steps == plan.steps else {
            throw .failure("The rollout state file \(stateName) is of a rollout of \(state.version) in steps \(state.steps.map { "\($0)%" }.joined(separator: ", ")), not of this plan's \(plan.version) in steps \(plan.steps.map { "\($0)%" }.joined(separator: ", ")); give that rollout's plan, or another --state file for a new rollout.")
        }
        return state
    }

    private func save(_ state: RolloutState) throws(CommandError) {
        var state = state
        state.updatedAt = nowSeconds
        try files.writeState(state.serialized())
    }

    private func onDisk() throws(CommandError) -> RolloutMachine.OnDisk? {
        try files.readDirective().map { RolloutMachine.OnDisk(serial: Self.serial(of: $0), sha256: SHA256.hash($0).hexString) }
    }

    private func flushNotes(_ machine: inout RolloutMachine) {
        for note in machine.takeNotes() { say(note) }
    }

    private func say(_ line: String) {
        console.out(line)
        fflush(nil)  // every stream: progress reaches a pipe or a log as it happens
    }

    var stateName: String { (files as? RolloutDiskFiles)?.statePath ?? "(state)" }

    private var nowSeconds: Int64 { clock.nowMilliseconds() / 1000 }

    private var judgeSummary: String {
        plan.hasChecks ? "judged by \(plan.checkNames.joined(separator: ", "))" : "with no checks (analysis.checks is empty)"
    }

    /// "installs in buckets below 10 (10%)", "every install (100%)".
    static func audience(_ percent: Int) -> String { RolloutMachine.audience(percent) }

    /// A reason a directive accepts: one line, at most `Directive.maxReasonLength` characters.
    static func oneLine(_ text: String) -> String {
        let flat = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        return flat.count <= Directive.maxReasonLength ? flat : String(flat.prefix(Directive.maxReasonLength - 3)) + "..."
    }

    /// The serial of the directive in an envelope's bytes (signature not checked).
    static func serial(of bytes: [UInt8]) -> UInt64? {
        guard let envelope = try? JSONDecoder().decode(DirectiveEnvelope.self, from: Data(bytes)),
              let payload = Data(base64Encoded: envelope.payload),
              let directive = try? JSONDecoder().decode(Directive.self, from: payload) else { return nil }
        return directive.serial
    }

    /// "01:30:00 UTC".
    static func clockTime(_ milliseconds: Int64) -> String {
        let seconds = Int(milliseconds / 1000) % 86_400
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
        return "\(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60)) UTC"
    }
}
