#if canImport(Glibc)
import Glibc
#endif

/// Baseline beside canary (`analysis.baseline=true`, docs/analysis.md): when a start-first
/// switch's new child is ready and its build goes on probation, the child it replaces is not
/// drained but kept serving beside it on the same sockets for the bake window, so that the
/// analyzer compares the two builds under the same host and traffic at the same time
/// (Kayenta's advice: a baseline that runs *with* the canary, not the old production).
///
/// - The window passes (or ends held, inconclusive, or as a dry run): the baseline drains and
///   stops as the old child of any switch does.
/// - The window fails: the bad verdict moves the choice to the baseline's slot (`markBad`),
///   and the baseline, already serving, takes over at once: the new child drains instead of
///   a new child of the old build being started. When the choice does not move (the old
///   build is bad or rejected too), the baseline drains.
/// - An operator's switch to the baseline's slot during the window is the same take-over;
///   the window ends inconclusive, as it does when another build starts.
/// - The baseline exits: its crash is counted like any child's; the comparison goes on with
///   the probes it answered.
extension SupervisorMachine {
    /// Whether the old child of a start-first switch stays as the baseline of `child`'s window:
    /// comparison is on, a window starts for `child`'s build (not a resumed one), and the old
    /// child is ready and of another build.
    func keepsAsBaseline(_ old: SupervisedChild, beside child: SupervisedChild, now: Moment) -> Bool {
        guard configuration.comparesWithBaseline, bakeWindowSeconds > 0, old.phase == .ready, old.stop == nil,
              let build = child.build, old.build != nil, old.build != build,
              probation.record?.build != build else { return false }
        if let last = resumable, last.build == build, last.state != .baking || last.endsAt > now.unixMilliseconds { return false }
        return true
    }

    /// The baseline is no longer wanted: it drains and stops like the old child of a switch.
    mutating func releaseBaseline(because why: String, now: Moment) -> [Action] {
        guard let held = baseline else { return [] }
        baseline = nil
        return [drain(held, now: now.monotonic),
                .say("\(held.title), the baseline, is no longer needed (\(why)); stopping it gracefully."),
                .publish]
    }

    /// The choice while a baseline serves beside the new child: its slot takes over at once;
    /// the new child's own slot keeps things as they are during the window and releases the
    /// baseline after the verdict. Nil when no baseline serves (the usual switch follows).
    mutating func baselineChoice(_ wanted: BuildSlot, now: Moment) -> [Action]? {
        guard let held = baseline, case .running(let canary) = state, canary.stop == nil else { return nil }
        guard held.slot == wanted, canary.slot != wanted, held.phase == .ready, held.stop == nil else {
            if case .analyzing = probation { return [] }
            return releaseBaseline(because: "the persisted choice keeps \(canary.title)", now: now) + [.acknowledgeChoice]
        }
        baseline = nil
        state = .running(held)
        switchFailure = nil
        var actions: [Action] = [drain(canary, now: now.monotonic),
                                 .say("the persisted choice now selects the \(wanted.rawValue) slot; \(held.title), the baseline serving beside \(canary.title), serves alone and \(canary.title) stops gracefully.")]
        if case .analyzing(var record, _) = probation {
            record.state = .inconclusive
            record.result = "\(held.title) (\(configuration.version(wanted))), its baseline, took over before the window ended"
            probation = .judged(record)
            actions += [.stopAnalyzer, .recordProbation(record)]
        }
        return actions + [.notifySystemd(["READY=1", "STATUS=\(statusLine(held))", "MAINPID=\(configuration.supervisorPID)"]),
                          .acknowledgeChoice, .publish]
    }

    /// The baseline exited: a crash is counted against its build; the comparison goes on with
    /// what it answered.
    mutating func baselineExited(status: ExitStatus) -> [Action] {
        guard let held = baseline else { return [] }
        baseline = nil
        if isStopping { return children.isEmpty ? stop(with: exitStatus) : [] }
        var actions: [Action] = [.say("\(held.title), the baseline, \(status.description); the comparison goes on with the probes it answered."), .publish]
        if status != .exited(0), let slot = held.slot, let build = held.build { actions.append(.countCrash(slot: slot, build: build)) }
        return actions
    }
}
