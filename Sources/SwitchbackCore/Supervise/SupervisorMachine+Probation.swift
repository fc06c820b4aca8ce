#if canImport(Glibc)
import Glibc
#endif

/// The probation (bake window) of the serving build: it starts when a child of a build other
/// than the last one judged becomes ready (a release, a rollback or rollforward, a directive,
/// an automatic switch, the install's first start), never on a restart of the same build; a
/// supervisor restarted during a window resumes it from the record. The analyzer
/// (`rollbackctl-remote analyze`) measures and judges; the machine acts on its verdict:
/// passed marks the build good again with a note, failed takes the crash-loop path
/// (`markBad`), held and inconclusive leave the build and wait for `rollbackctl promote` or
/// `abort`, a dry run's verdicts act on nothing (`analysisVerdict`).
/// The record is written last of a verdict's actions: a reader that sees it ended (`rollbackctl
/// promote` waits for that) sees the history, the health verdict and the switch already done.
extension SupervisorMachine {
    /// Where the probation of the serving build is.
    enum Probation: Equatable {
        /// None since the supervisor started (no bake window, or none started yet).
        case none
        /// The analyzer runs; past `overdueAt` (monotonic seconds) without a verdict, it is
        /// stopped and the probation ends inconclusive.
        case analyzing(ProbationRecord, overdueAt: Double)
        /// Ended (passed, failed, promoted, aborted), or inconclusive and waiting for the operator.
        case judged(ProbationRecord)

        var record: ProbationRecord? {
            switch self {
            case .none: return nil
            case .analyzing(let record, _), .judged(let record): return record
            }
        }
    }

    /// An operator's request (`rollbackctl promote` / `abort`, through `probation.request`).
    enum ProbationRequest: Equatable {
        case promote(build: String)
        case abort(build: String)

        /// Parses the request file's line (`promote BUILD` / `abort BUILD`); nil when it does not read.
        init?(line: String) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).map(String.init)
            guard words.count == 2 else { return nil }
            switch words[0] {
            case "promote": self = .promote(build: words[1])
            case "abort": self = .abort(build: words[1])
            default: return nil
            }
        }

        var build: String {
            switch self {
            case .promote(let build), .abort(let build): return build
            }
        }
    }

    /// How long past the window's end the analyzer may take to give its verdict.
    static let verdictGraceSeconds = 15.0

    /// The probation's deadline, if the analyzer runs.
    var probationDeadline: Double? {
        if case .analyzing(_, let overdueAt) = probation { return overdueAt }
        return nil
    }

    /// A child became ready and serves: its build goes on probation when it is not the build
    /// last judged (or resumes when the record says its window is still open).
    /// `comparison`: with `analysis.baseline=true`, the build serving beside it or why none does.
    mutating func probationOnReady(_ child: SupervisedChild, now: Moment, comparison: ProbationRecord.Comparison? = nil) -> [Action] {
        guard let slot = child.slot, let build = child.build else { return [] }
        if let record = probation.record, record.build == build { return [] }
        var actions: [Action] = []
        if case .analyzing(var old, _) = probation {
            old.state = .inconclusive
            old.result = "\(child.title) (\(configuration.version(slot))) started before the window of the \(old.slot.rawValue) build (\(old.version)) ended"
            actions += [.stopAnalyzer, .recordProbation(old)]
            probation = .judged(old)
        }
        let nowMilliseconds = now.unixMilliseconds
        if let last = resumable, last.build == build {
            resumable = nil
            if last.state == .baking, last.endsAt > nowMilliseconds {
                var last = last
                // The children of the supervisor that started the window did not survive it.
                if last.comparison != nil { last.comparison = .none("the supervisor was restarted during the window, and the baseline with it") }
                probation = .analyzing(last, overdueAt: overdue(last, now: now))
                let left = (last.endsAt - nowMilliseconds + 999) / 1000
                return actions + [.say("the \(slot.rawValue) build (\(last.version)) resumes its bake window: \(left) s left."),
                                  .startAnalyzer(last)]
            }
            if last.state != .baking {
                probation = .judged(last)
                return actions
            }
            // Baking, but its window ended while no supervisor ran: judged again from the start.
        }
        resumable = nil
        guard bakeWindowSeconds > 0 else { return actions }
        var record = ProbationRecord(slot: slot, version: configuration.version(slot), build: build,
                                     startedAt: nowMilliseconds, endsAt: nowMilliseconds + Int64(bakeWindowSeconds) * 1000)
        record.comparison = comparison
        probation = .analyzing(record, overdueAt: overdue(record, now: now))
        let started = "the \(slot.rawValue) build (\(record.version)) is on probation for \(bakeWindowSeconds) s" + (comparison?.clause ?? "")
        return actions + [.say(started + "."), .recordProbation(record),
                          .recordHistory(.probationStarted, from: slot, to: slot, reason: started + " (until \(formatRFC3339(record.endsAt / 1000)))"),
                          .startAnalyzer(record)]
    }

    private func overdue(_ record: ProbationRecord, now: Moment) -> Double {
        now.monotonic + Double(max(0, record.endsAt - now.unixMilliseconds)) / 1000 + Self.verdictGraceSeconds
    }

    /// The analyzer's line `measurement NAME PHASE SENTENCE`.
    mutating func analysisMeasured(check: String, phase: String, sentence: String, now: Moment) -> [Action] {
        guard case .analyzing(var record, let overdueAt) = probation else { return [] }
        record.update(.init(name: check, phase: phase, sentence: sentence, at: now.unixMilliseconds))
        probation = .analyzing(record, overdueAt: overdueAt)
        return [.recordProbation(record)]
    }

    /// The analyzer's verdict: acted on once. Passed marks the build good again; failed takes
    /// the crash-loop path; held and inconclusive leave the build serving and wait for the
    /// operator; a dry run's verdicts are recorded and do nothing but end the window (the
    /// build is kept as if it had passed, with a note saying what would have happened).
    mutating func analysisVerdict(_ verdict: AnalysisVerdict, now: Moment) -> [Action] {
        guard case .analyzing(var record, _) = probation else { return [] }
        let sentence = verdict.sentence
        record.state = ProbationRecord.State(verdict)
        record.result = sentence
        probation = .judged(record)
        let what = "the \(record.slot.rawValue) build (\(record.version))"
        let window = "its \(record.windowSeconds) s bake window"
        switch verdict {
        case .passed:
            let note = "passed \(window)"
            return releaseBaseline(because: "the window passed", now: now) + [.say("\(what) \(note): \(sentence)."),
                    .recordHistory(.probationPassed, from: record.slot, to: record.slot, reason: "\(what) \(note): \(sentence)"),
                    .markGoodAfterProbation(slot: record.slot, build: record.build, note: note), .recordProbation(record)]
        case .failed:
            // A baseline still serving takes over when the choice moves to its slot; the choice
            // is read again at once, and a baseline it does not select then stops.
            return [.recordHistory(.probationFailed, from: record.slot, to: record.slot, reason: "\(what) failed \(window): \(sentence)"),
                    .markBad(slot: record.slot, build: record.build, why: "failed \(window): \(sentence)"), .recordProbation(record)]
                + (baseline == nil ? [] : [.reconsiderChoice])
        case .held, .inconclusive:
            let held = record.state == .held
            let reason = held ? "\(what) is held by \(window): \(sentence)" : "\(what) ended \(window) inconclusive: \(sentence)"
            return releaseBaseline(because: "the window ended \(held ? "held" : "inconclusive")", now: now) + [.say("\(HealthPolicy.capitalized(reason)); it stays: run rollbackctl promote to keep it or rollbackctl abort to roll it back."),
                    .recordProbation(record),
                    .recordHistory(held ? .probationHeld : .probationInconclusive, from: record.slot, to: record.slot, reason: reason)]
        case .wouldRollBack, .wouldHold:
            let note = "ended \(window), a dry run"
            let reason = "\(what) \(note): \(sentence)"
            return releaseBaseline(because: "a dry run keeps the new build", now: now) + [.say("\(HealthPolicy.capitalized(reason)); nothing was done, it stays."),
                    .recordHistory(record.state == .wouldHold ? .probationWouldHold : .probationWouldRollBack,
                                   from: record.slot, to: record.slot, reason: reason),
                    .markGoodAfterProbation(slot: record.slot, build: record.build, note: "\(note) that \(sentence)"),
                    .recordProbation(record)]
        }
    }

    /// The analyzer exited (or could not be started) without a verdict: inconclusive, never a rollback.
    mutating func analyzerGone(_ sentence: String, now: Moment) -> [Action] {
        guard case .analyzing = probation else { return [] }
        return analysisVerdict(.inconclusive(sentence), now: now)
    }

    /// The app's own signal (sd_notify `X_SWITCHBACK_FAILURES` / `X_SWITCHBACK_BAD`), passed to
    /// the analyzer when the child runs the build on probation.
    mutating func appSignal(pid: pid_t, message: AnalyzerMessage) -> [Action] {
        guard case .analyzing(let record, _) = probation,
              let child = children.first(where: { $0.pid == pid }), child.build == record.build else { return [] }
        return [.tellAnalyzer(message)]
    }

    /// `rollbackctl promote` / `abort`: acted on when it names the build whose probation is
    /// open (baking or inconclusive).
    mutating func probationRequested(_ request: ProbationRequest, now: Moment) -> [Action] {
        guard var record = probation.record, record.state.isOpen, record.build == request.build else {
            return [.say("a probation request for build \(request.build.prefix(12)) was ignored: no probation of that build is open.")]
        }
        var actions: [Action] = []
        if case .analyzing = probation { actions.append(.stopAnalyzer) }
        let what = "the \(record.slot.rawValue) build (\(record.version))"
        switch request {
        case .promote:
            record.state = .promoted
            record.result = "promoted by the operator (rollbackctl promote)"
            probation = .judged(record)
            return actions + [.say("\(what) was promoted by the operator."),
                              .recordHistory(.probationPromoted, from: record.slot, to: record.slot, reason: "\(what) was promoted by the operator (rollbackctl promote)", source: .cli),
                              .markGoodAfterProbation(slot: record.slot, build: record.build, note: "promoted by the operator during its bake window"),
                              .recordProbation(record)]
        case .abort:
            record.state = .aborted
            record.result = "aborted by the operator (rollbackctl abort)"
            probation = .judged(record)
            return actions + [.recordHistory(.probationAborted, from: record.slot, to: record.slot, reason: "\(what) was aborted by the operator (rollbackctl abort)", source: .cli),
                              .markBad(slot: record.slot, build: record.build, why: "was aborted by the operator during its bake window (rollbackctl abort)", by: .cli),
                              .recordProbation(record)]
        }
    }

    /// The timer: an analyzer that gave no verdict well past the window's end is stopped.
    mutating func checkProbation(now: Moment) -> [Action] {
        guard case .analyzing(_, let overdueAt) = probation, now.monotonic >= overdueAt else { return [] }
        return [.stopAnalyzer] + analysisVerdict(.inconclusive("the analyzer gave no verdict by the end of the window"), now: now)
    }
}
