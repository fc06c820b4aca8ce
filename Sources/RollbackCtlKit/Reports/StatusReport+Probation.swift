import SwitchbackCore

/// The probation in `status`: lines for people, an object for `--json`, from the record.
extension StatusReport {
    /// Seconds left in the window now (0 once it ended, or when not baking).
    func secondsLeft(_ record: ProbationRecord, nowMilliseconds: Int64 = currentUnixTime() * 1000) -> Int64 {
        record.state == .baking ? max(0, (record.endsAt - nowMilliseconds + 999) / 1000) : 0
    }

    /// "Probation: ..." then one line per check's last measurement.
    var probationLines: [String] {
        if let probationProblem { return ["Probation: \(probationProblem)"] }
        guard let record = probation else { return [] }
        let what = "the \(record.slot.rawValue) build (\(record.version))"
        var lines: [String] = []
        switch record.state {
        case .baking where supervisor == nil:
            lines.append("Probation: \(what) is baking, \(secondsLeft(record)) s left of \(record.windowSeconds) s, but no supervisor runs: the window resumes when it starts again.")
        case .baking:
            lines.append("Probation: \(what) is baking: \(secondsLeft(record)) s left of its \(record.windowSeconds) s window (ends \(formatUTC(record.endsAt / 1000))); rollbackctl promote or abort ends it early.")
        case .inconclusive:
            lines.append("Probation: \(what) ended its \(record.windowSeconds) s window inconclusive: \(record.result ?? "no result"). It stays; run rollbackctl promote to keep it or rollbackctl abort to roll it back.")
        case .held:
            lines.append("Probation: \(what) is held by its \(record.windowSeconds) s window: \(record.result ?? "no result"). It stays; run rollbackctl promote to keep it or rollbackctl abort to roll it back.")
        case .wouldRollBack, .wouldHold:
            lines.append("Probation: \(what) ended its \(record.windowSeconds) s window, a dry run (started \(formatUTC(record.startedAt / 1000))): \(record.result ?? "no result"). Nothing was done.")
        case .passed, .failed, .promoted, .aborted:
            lines.append("Probation: \(what) \(record.state.rawValue) (\(record.windowSeconds) s window, started \(formatUTC(record.startedAt / 1000))): \(record.result ?? "no result").")
        }
        switch record.comparison {
        case .beside(let pid, _, let slot, let version, _)?:
            lines.append("  compared with the \(slot.rawValue) build (\(version)), pid \(pid), serving beside it (analysis.baseline)")
        case .none(let why)?:
            lines.append("  no baseline (analysis.baseline): \(why); judged by its absolute checks only")
        case nil:
            break
        }
        for check in record.checks {
            lines.append("  \(check.name): \(check.phase): \(check.sentence)")
        }
        return lines
    }

    static func baselineDocument(_ comparison: ProbationRecord.Comparison) -> StatusDocument.Probation.Baseline {
        switch comparison {
        case .beside(let pid, _, let slot, let version, _): return .init(slot: slot.rawValue, version: version, pid: pid, absent: nil)
        case .none(let why): return .init(slot: nil, version: nil, pid: nil, absent: why)
        }
    }

    var probationDocument: StatusDocument.Probation? {
        if let probationProblem {
            return .init(slot: "", version: "", build: "", state: "", startedAt: "", endsAt: "", windowSeconds: 0, secondsLeft: 0,
                         result: nil, supervised: supervisor != nil, checks: [], problem: probationProblem)
        }
        guard let record = probation else { return nil }
        return .init(slot: record.slot.rawValue, version: record.version, build: record.build, state: record.state.rawValue,
                     startedAt: formatRFC3339(record.startedAt / 1000), endsAt: formatRFC3339(record.endsAt / 1000),
                     windowSeconds: record.windowSeconds, secondsLeft: secondsLeft(record), result: record.result,
                     supervised: supervisor != nil,
                     checks: record.checks.map { .init(name: $0.name, phase: $0.phase, sentence: $0.sentence, at: $0.at > 0 ? formatRFC3339($0.at / 1000) : nil) },
                     problem: nil, baseline: record.comparison.map(Self.baselineDocument))
    }
}
