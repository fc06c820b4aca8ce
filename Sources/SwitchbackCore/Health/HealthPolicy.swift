/// What the health verdicts change about a start: the pure part of automatic rollback.
public struct HealthChoice: Sendable {
    /// The decision to act on (the input one, or the other slot).
    public var decision: SlotDecision
    /// A build whose tries ran out now: mark it bad.
    public var markBad: BuildSlot?
    /// Persist the flag to this slot (source `auto`), with this reason.
    public var switchFlag: (slot: BuildSlot, reason: String)?
    /// A line for stderr.
    public var message: String?
}

/// Automatic rollback, as a pure function of the decision, both verdicts and the versions.
public enum HealthPolicy {
    /// Where a build just marked bad hands over, for the writers that mark it while it runs
    /// (the supervisor's crashes and failed bake windows, `rollbackctl mark-bad`), by the rule
    /// `choose` applies at a start: never to a build that was rejected (an operator's or a
    /// directive's choice wins), nor to one that is bad too.
    public enum Handover: Sendable, Equatable {
        /// Switch to the other slot.
        case switchToOther
        /// The other build was rejected; the note says who and why.
        case otherRejected(note: String)
        /// The other build is bad too, by an automatic verdict.
        case otherBad
    }

    /// The handover after a build was marked bad, given the other slot's verdict.
    public static func handover(to otherHealth: SlotHealth) -> Handover {
        if otherHealth.isRejected { return .otherRejected(note: otherHealth.note ?? "marked bad") }
        if otherHealth.isBad { return .otherBad }
        return .switchToOther
    }

    /// Applies the verdicts to `decision`:
    /// - a build on trial with no tries left is marked bad now;
    /// - a bad build does not run: the other slot runs and the flag follows it (source `auto`),
    ///   unless the other build was rejected explicitly (an operator or a directive marked it
    ///   bad or rolled back from it): explicit choices win, so the failing build keeps
    ///   running, with a loud message on every start that names the command that recovers;
    /// - when both builds are bad by automatic verdicts, the one marked good most recently
    ///   runs (or the chosen one when neither ever was), with a loud message.
    /// - when both slots hold the same build (a first release), a failing build keeps
    ///   running, with a loud message: there is nothing to roll back to.
    /// A forced run (`SWITCHBACK_SLOT`) is left alone.
    public static func choose(_ decision: SlotDecision, current: SlotHealth, previous: SlotHealth,
                              versions: (BuildSlot) -> String, sameBuild: Bool = false) -> HealthChoice {
        var choice = HealthChoice(decision: decision)
        if decision.isForced { return choice }
        func health(_ slot: BuildSlot) -> SlotHealth { slot == .current ? current : previous }
        func describe(_ slot: BuildSlot) -> String { "the \(slot.rawValue) build (\(versions(slot)))" }

        let chosen = decision.slot, other = chosen.other
        let chosenHealth = health(chosen)
        guard chosenHealth.isBad || chosenHealth.isExhausted else { return choice }
        let why = chosenHealth.isExhausted
            ? "failed \(chosenHealth.failedStarts) \(chosenHealth.failedStarts == 1 ? "start" : "starts") without being marked good"
            : "is marked bad\(chosenHealth.note.map { " (\($0))" } ?? "")"
        if chosenHealth.isExhausted { choice.markBad = chosen }
        if sameBuild {
            choice.decision = SlotDecision(slot: chosen, reason: .noOtherBuild(failed: chosen, why: why))
            choice.message = "WARNING: \(describe(chosen)) \(why), and this bundle is a first release: both slots hold the same build, so there is nothing to roll back to. Running it anyway; fix it and ship a new release."
            return choice
        }

        let otherHealth = health(other)
        if otherHealth.isRejected && !chosenHealth.isRejected {
            let rejected = "was rejected: \(otherHealth.note ?? "marked bad with rollbackctl")"
            choice.decision = SlotDecision(slot: chosen, reason: .keptByExplicitChoice(failed: chosen, why: why, rejected: rejected))
            let recover = other == .current
                ? "Fix the previous build, or run 'rollbackctl rollforward' to run \(versions(other)) again"
                : "Fix the current build, or run 'rollbackctl rollback' to run \(versions(other)) again"
            choice.message = "WARNING: \(describe(chosen)) \(why), but automatic rollback will not switch to \(describe(other)), which \(rejected). Running the \(chosen.rawValue) slot anyway. \(recover)."
            return choice
        }
        if !otherHealth.isBad && !otherHealth.isExhausted {
            choice.decision = SlotDecision(slot: other, reason: .markedBad(failed: chosen, why: why))
            choice.switchFlag = (other, "\(describe(chosen)) \(why)")
            choice.message = "\(capitalized(describe(chosen))) \(why); running the \(other.rawValue) slot (\(versions(other))) instead."
            return choice
        }
        // Both bad: run the one that last started well, never one rejected explicitly, and
        // say how to recover.
        let run: BuildSlot
        switch (current.isRejected ? nil : current.lastGoodAt, previous.isRejected ? nil : previous.lastGoodAt) {
        case (let c?, let p?): run = c >= p ? .current : .previous
        case (_?, nil): run = .current
        case (nil, _?): run = .previous
        case (nil, nil): run = chosen
        }
        let lastGood = health(run).lastGoodAt.map { "it last started well on \(formatUTC($0))" } ?? "neither ever started well"
        choice.decision = SlotDecision(slot: run, reason: .bothBad)
        choice.message = "WARNING: both builds are bad (\(describe(chosen)) \(why); \(describe(other)) \(otherHealth.isBad ? "is marked bad" : "has no tries left")). Running the \(run.rawValue) slot because \(lastGood). Fix a build and run 'rollbackctl rollforward' or 'rollbackctl rollback' to put it back on trial, or 'rollbackctl mark-good SLOT'."
        return choice
    }

    public static func capitalized(_ text: String) -> String {
        text.prefix(1).uppercased() + text.dropFirst()
    }
}
