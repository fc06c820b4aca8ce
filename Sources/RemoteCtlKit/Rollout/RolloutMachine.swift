import SwitchbackCore

/// The rollout's decisions as a state machine: the persisted `RolloutState` and a `mutating
/// func` per event (resumed, about to publish, published, judged) that returns the action for
/// the driver to perform. It does no I/O and reads no clock (times come in with the events),
/// so every transition has a unit test without files, keys, servers or sleeps.
///
/// The driver persists `state` after every event, so what is on disk is always the state the
/// last action was decided from: written before a directive is published (phase
/// `publishing`/`rollingBack`, with the serial and SHA-256 of the file being written) and
/// after (phase `analysing`/`rolledBack`).
struct RolloutMachine {
    /// A directive the driver is to sign and publish.
    struct Publication: Sendable, Equatable {
        var decision: Decision
        /// `rollout_percent`.
        var percent: Int
        var reason: String
        /// The serial to sign with: set when a directive signed before a kill never reached
        /// the disk (the same serial is published, once); nil for a new one (the driver takes
        /// the time in seconds, above every serial it knows of).
        var serial: UInt64?

        enum Decision: Sendable, Equatable { case current, previous }
    }

    enum Action: Sendable, Equatable {
        /// Sign and publish this directive (`willPublish`, write, `didPublish`).
        case publish(Publication)
        /// Run the pause of the step in hand and judge it (`judged`); `resumed` when the step
        /// was published by an earlier run.
        case analyse(step: Int, percent: Int, seconds: Int, resumed: Bool)
        /// Stop for an operator (exit 3): the sentence says what to run.
        case wait(String)
        /// Done (exit 0).
        case finish(String)
        /// Stopped by a failure or a refusal (exit 1).
        case fail(String)
        /// Stopped rolled back: a step failed its analysis and the rollback is published, or
        /// the rollout was rolled back before (exit 2).
        case rolledBack(String)
        /// Stopped because another publisher took the directive file over during a pause: an
        /// `--abort` run from another process, or a directive published by hand. Nothing is
        /// published after it and the state is not written (exit 4).
        case superseded(String)
    }

    /// What the directive file holds now (read by the driver before `resume`).
    struct OnDisk: Sendable, Equatable {
        /// Its serial, if it holds a directive (signature not checked: only compared).
        var serial: UInt64?
        /// The SHA-256 of its bytes.
        var sha256: String
    }

    let plan: RolloutPlan
    private(set) var state: RolloutState
    /// `--approve`: opens the first gate this run reaches (an approval step or an
    /// inconclusive verdict); later gates wait again.
    private var approval: Bool
    /// `--promote-full`: the remaining steps and their pauses are skipped; the last step is
    /// published and the rollout finishes, unanalysed (Argo's `promote --full`).
    private let promoteFull: Bool
    /// Lines for the operator about what was decided and why, taken by the driver.
    private(set) var notes: [String] = []

    init(plan: RolloutPlan, state: RolloutState?, approve: Bool, promoteFull: Bool = false) {
        self.plan = plan
        self.state = state ?? .fresh(plan)
        approval = approve
        self.promoteFull = promoteFull
    }

    /// "step 2 of 4 (10%)".
    var stepName: String { "step \(state.step) of \(state.steps.count) (\(state.percent)%)" }

    /// Takes the notes written since the last call.
    mutating func takeNotes() -> [String] {
        defer { notes = [] }
        return notes
    }

    /// Decides the first action of a run from the state and the directive file on disk.
    /// `abort` (`--abort`) publishes the rollback directive from any phase but a finished rollback.
    mutating func resume(onDisk: OnDisk?, abort: Bool, now: Int64) -> Action {
        if let serial = onDisk?.serial, serial > RolloutState.highestFollowableSerial, onDisk?.sha256 != state.directiveSHA256 {
            return .fail("The directive file holds serial \(serial), above any time in seconds (\(RolloutState.highestFollowableSerial) is in the year 2286): a rollout that followed it would publish serials every install accepts, after which every time-based serial (sign's, the next rollout's) is refused as a replay; publish a directive with a time-based serial (rollbackctl-remote sign without --serial) and run the rollout again.")
        }
        switch state.phase {
        case .rolledBack:
            return .rolledBack("The rollout of \(plan.version) was already rolled back (directive serial \(state.serial)): \(state.result ?? "no reason recorded"); to try again, start a new rollout with another --state file.")
        case .rollingBack where !state.isRollbackSigned:
            // Decided and written down, then killed before it was signed: the file still
            // holds the last step's directive (or whatever was there), so no serial or hash
            // of the rollback can be compared; it is published now, with a new serial.
            notes.append("The rollback of \(stepName) was decided before the last run stopped, and not yet published; publishing it now.")
            return .publish(rollbackPublication(reason: state.result ?? "rollback"))
        case .publishing, .rollingBack:
            let inFlight = state.phase == .rollingBack ? "the rollback" : stepName
            if onDisk?.sha256 == state.directiveSHA256 {
                notes.append("The directive of \(inFlight) (serial \(state.serial)) was written before the last run stopped; not publishing it again.")
                return didPublish(now: now, resumed: true, abort: abort)
            }
            if let serial = onDisk?.serial, serial >= state.serial {
                return .fail(foreign(onDisk: onDisk))
            }
            if abort && state.phase == .publishing { return rollBack(.aborted, because: "aborted by the operator (--abort)") }
            notes.append("The directive of \(inFlight) (serial \(state.serial)) did not reach the disk before the last run stopped; publishing it now.")
            var publication = state.phase == .rollingBack ? rollbackPublication(reason: state.result ?? "rollback") : stepPublication()
            publication.serial = state.serial
            return .publish(publication)
        case .analysing:
            guard onDisk?.sha256 == state.directiveSHA256 else { return .fail(foreign(onDisk: onDisk)) }
            if abort { return rollBack(.aborted, because: "aborted by the operator (--abort)") }
            if promoteFull { return promoteToFull() }
            notes.append("Resuming \(stepName): its directive (serial \(state.serial)) is already published; its analysis runs again over a whole pause.")
            return .analyse(step: state.step, percent: state.percent, seconds: plan.pause(afterStep: state.step), resumed: true)
        case .completed:
            if abort { return rollBack(.aborted, because: "aborted by the operator (--abort) after the rollout completed") }
            return .finish("The rollout of \(plan.version) is already complete: \(outcome)")
        case .ready, .awaitingApproval:
            if abort { return rollBack(.aborted, because: "aborted by the operator (--abort)") }
            if let serial = onDisk?.serial, serial > state.serial, state.serial > 0 {
                return .fail(foreign(onDisk: onDisk))
            }
            if promoteFull { return promoteToFull() }
            return advance()
        case .inconclusive, .held:
            let word = state.phase.rawValue
            if abort { return rollBack(.aborted, because: "aborted by the operator (--abort) after \(state.phase == .held ? "a held" : "an inconclusive") analysis") }
            if promoteFull { return promoteToFull() }
            guard approval else { return waitForTheOperator(state.result ?? "no result") }
            approval = false
            notes.append("\(stepName.capitalizedFirst): \(word), approved by the operator (--approve); going on.")
            return next()
        }
    }

    /// The directive in `publication` is signed as `serial` with these bytes' `sha256`: the
    /// driver writes the state (phase publishing) before it writes the file.
    mutating func willPublish(serial: UInt64, sha256: String, now: Int64) {
        state.serial = serial
        state.directiveSHA256 = sha256
        state.updatedAt = now
        if state.phase != .rollingBack { state.phase = .publishing }
    }

    /// The file is written: the driver writes the state (phase analysing or rolled back) and
    /// performs the returned action.
    mutating func didPublish(now: Int64, resumed: Bool = false, abort: Bool = false) -> Action {
        state.updatedAt = now
        if state.phase == .rollingBack {
            state.phase = .rolledBack
            state.rollbackPublishedAt = now
            let reason = state.result ?? "rolled back"
            if state.rollbackCause == .aborted {
                return .finish("Rolled back \(plan.version) for every install (directive serial \(state.serial)): \(reason).")
            }
            return .rolledBack("The rollout of \(plan.version) stopped at \(stepName) and was rolled back for every install (directive serial \(state.serial)): \(reason).")
        }
        state.phase = .analysing
        state.records[state.step] = .init(serial: state.serial, publishedAt: now)
        if abort { return rollBack(.aborted, because: "aborted by the operator (--abort)") }
        if promoteFull {
            // A step in flight from an earlier run is out; now the last one, or the end.
            return state.step == state.steps.count ? promotedToFull() : promoteToFull()
        }
        return .analyse(step: state.step, percent: state.percent, seconds: plan.pause(afterStep: state.step), resumed: resumed)
    }

    /// The pause of the step in hand ended with `verdict`; `onDisk` is the directive file and
    /// `saved` the state file as the driver re-read them, under the publication lock, before
    /// anything more is published. When another process took the directive over during the
    /// pause (an `--abort` from another shell, whose state says so; or a directive published
    /// by hand, which the state does not know), the run is superseded: nothing more is
    /// published and the state stays as the other process left it. Otherwise the verdict
    /// is judged (`judged`).
    mutating func pauseEnded(_ verdict: AnalysisVerdict, onDisk: OnDisk?, saved: RolloutState?, now: Int64) -> Action {
        let pause = "the pause of \(stepName)"
        if let saved, saved.rollbackCause == .aborted, saved.phase == .rollingBack || saved.phase == .rolledBack {
            let published = saved.phase == .rolledBack || (saved.isRollbackSigned && onDisk?.sha256 == saved.directiveSHA256)
            state = saved
            guard published else {
                return .superseded("The rollout of \(plan.version) was aborted from another process (--abort) during \(pause), but its rollback is not on disk: that run stopped before it was written; this run publishes nothing: run the same command with --abort to publish it.")
            }
            return .superseded("The rollout of \(plan.version) was aborted from another process (--abort) during \(pause): its rollback (directive serial \(saved.serial)) stays published, and this run publishes nothing more.")
        }
        guard onDisk?.sha256 == state.directiveSHA256 else {
            let holds = onDisk.map { $0.serial.map { "a directive with serial \($0)" } ?? "something that is no directive" } ?? "nothing"
            return .superseded("The directive file was replaced during \(pause): it holds \(holds), not this rollout's (serial \(state.serial)), so someone published by hand; this run publishes nothing more over it or after it: find out who, then run the same command with --abort to roll back, or start a new rollout with another --state file.")
        }
        return judged(verdict, now: now)
    }

    /// The driver began the step's pause, ending at `endsAt` (Unix milliseconds): kept in the
    /// state for `rollout-status`.
    mutating func pauseStarted(endsAt: Int64) {
        state.pauseEndsAt = endsAt
    }

    /// The analysis of the step in hand ended with `verdict`.
    mutating func judged(_ verdict: AnalysisVerdict, now: Int64) -> Action {
        state.updatedAt = now
        state.result = verdict.sentence
        state.records[state.step]?.result = "\(verdict.word): \(verdict.sentence)"
        switch verdict {
        case .passed(let sentence):
            notes.append("\(stepName.capitalizedFirst): analysis passed: \(sentence).")
            return next()
        case .wouldRollBack(let sentence), .wouldHold(let sentence):
            notes.append("\(stepName.capitalizedFirst): dry run (analysis.dry_run), \(sentence); going on.")
            return next()
        case .failed(let sentence):
            notes.append("\(stepName.capitalizedFirst): analysis failed: \(sentence); rolling back.")
            return rollBack(.failed, because: sentence)
        case .inconclusive(let sentence), .held(let sentence):
            state.phase = verdict.word == "held" ? .held : .inconclusive
            guard approval else { return waitForTheOperator(sentence) }
            approval = false
            notes.append("\(stepName.capitalizedFirst): analysis \(verdict.word) (\(sentence)); approved in advance (--approve), going on.")
            return next()
        }
    }

    /// A step whose analysis was inconclusive or held waits for the operator.
    private func waitForTheOperator(_ sentence: String) -> Action {
        let how = state.phase == .held ? "held by a check that holds (on_failure=hold)" : "inconclusive"
        return .wait("The analysis of \(stepName) was \(how) (\(sentence)); run the same command with --approve to go on, or with --abort to roll back.")
    }

    /// What a finished rollout did: what it published, and what it measured. Never how many
    /// installs run the release: only the installs' own metrics say that (a check such as the
    /// share-of-fleet query in docs/rollout.md, in the plan, makes the last pause measure it).
    private var outcome: String {
        let measured = state.records[state.step]?.result ?? state.result ?? "nothing recorded"
        return "its last directive (serial \(state.serial)) was published for \(Self.audience(state.percent)); its last pause measured: \(measured)."
    }

    /// "installs in buckets below 10 (10%)", "every install (100%)".
    static func audience(_ percent: Int) -> String {
        percent >= 100 ? "every install (100%)" : "installs in buckets below \(percent) (\(percent)%)"
    }

    /// Moves past the step in hand: the next step, or the end.
    private mutating func next() -> Action {
        guard state.step < state.steps.count else {
            state.phase = .completed
            return .finish("The rollout of \(plan.version) is complete: \(outcome)")
        }
        state.step += 1
        state.phase = .ready
        return advance()
    }

    /// The step in hand is next: publish it, or wait for an approval.
    private mutating func advance() -> Action {
        if plan.approvalSteps.contains(state.percent) {
            guard approval else {
                state.phase = .awaitingApproval
                state.result = "waiting for approval"
                return .wait("Waiting for approval: \(stepName) is published only once an operator approves it; run the same command with --approve to publish it, or with --abort to roll back.")
            }
            approval = false
            notes.append("\(stepName.capitalizedFirst): approved by the operator (--approve).")
        }
        state.phase = .ready
        return .publish(stepPublication())
    }

    /// `--promote-full`: straight to the last step, skipping the steps, approvals and pauses
    /// between (its publication then finishes the rollout: `didPublish`).
    private mutating func promoteToFull() -> Action {
        // The last step's pause, interrupted: it is published already.
        if state.phase == .analysing, state.step == state.steps.count { return promotedToFull() }
        let skipped = state.steps.count - state.step
        notes.append("Promoted by the operator (--promote-full): \(skipped > 0 ? "skipping \(skipped) step\(skipped == 1 ? "" : "s") and their pauses, " : "")publishing the last step now, unanalysed.")
        state.step = state.steps.count
        state.phase = .ready
        return .publish(stepPublication())
    }

    /// The last step is published under `--promote-full`: the rollout is complete, unanalysed.
    private mutating func promotedToFull() -> Action {
        state.phase = .completed
        state.result = "promoted to 100% by the operator (--promote-full): not analysed"
        state.records[state.step]?.result = state.result
        return .finish("The rollout of \(plan.version) is complete: \(outcome)")
    }

    private mutating func rollBack(_ cause: RolloutState.RollbackCause, because reason: String) -> Action {
        state.phase = .rollingBack
        state.rollbackCause = cause
        state.result = reason
        return .publish(rollbackPublication(reason: reason))
    }

    private func stepPublication() -> Publication {
        Publication(decision: .current, percent: state.percent,
                    reason: "Rollout of \(plan.version): \(stepName), run the current slot.")
    }

    private func rollbackPublication(reason: String) -> Publication {
        Publication(decision: .previous, percent: 100, reason: "Rollout of \(plan.version) rolled back at \(stepName): \(reason)")
    }

    /// The refusal when the directive file holds something this rollout did not write.
    private func foreign(onDisk: OnDisk?) -> String {
        let holds = onDisk.map { $0.serial.map { "a directive with serial \($0)" } ?? "something that is no directive" } ?? "nothing"
        return "The directive file holds \(holds), not the directive of \(stepName) this rollout published (serial \(state.serial)): someone else published over it; find out who, then run the same command with --abort to roll back, or start a new rollout with another --state file."
    }
}

extension String {
    /// The text with its first letter upper-cased ("step 2" → "Step 2").
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
