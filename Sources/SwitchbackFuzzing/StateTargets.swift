import SwitchbackCore

/// The state directory's files: each parsed, then driven through what `rollbackctl status`,
/// `rollbackctl history` and the launcher do with it.
enum StateTargets {
    static let path = "/fuzz/state"

    /// `state`: parse, explain the decision it makes, format its time, round-trip.
    static func state(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let state: PersistedState
        do { state = try PersistedState.parse(bytes, path: path) } catch {
            // A damaged state file: the launcher explains what it assumes.
            let loaded = LoadedState(state: .initial, problem: error)
            _ = loaded.problemSentence
            return try rejected(error.message)
        }
        let loaded = LoadedState(state: state)
        var explanation = ""
        do {
            let decision = try SlotDecision.decide(state: loaded, forcedSlot: nil)
            explanation = decision.explanation
        } catch {
            throw FuzzFailure("SlotDecision.decide threw for a parsed state: \(error.message)")
        }
        let time = state.changedAt.map { formatUTC($0) + " " + formatRFC3339($0) } ?? "-"
        let again: PersistedState
        do { again = try PersistedState.parse(state.serialized(), path: path) } catch {
            throw FuzzFailure("the serialized state does not parse: \(error.message)")
        }
        try check(again == state, "the state changed in a round trip: \(state) became \(again)")
        return .parsed("\(state.slot.rawValue) \(state.source.rawValue) \(time): \(explanation)")
    }

    /// `health`: parse, check ranges as HealthStore.load does, then what a start and the
    /// policy do: use a try (failed_starts + 1), summaries, the both-bad choice.
    static func health(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let record: HealthRecord
        do {
            record = try HealthRecord.parse(bytes, path: path)
        } catch {
            return try rejected(error.message)
        }
        var lines: [String] = []
        for var health in record.builds {
            lines.append("\(health.build.prefix(12)): \(health.summary)")
            lines.append(health.lastGoodAt.map(formatUTC) ?? "-")
            lines.append(health.changedAt.map(formatRFC3339) ?? "-")
            // A start of a build on trial uses a try (StartSession.begin).
            if case .trial(let left) = health.verdict {
                health.verdict = .trial(triesLeft: max(0, left - 1))
                health.failedStarts = min(health.failedStarts, ValueRange.count.upperBound - 1) + 1
                lines.append(health.summary)
            }
        }
        // The plan a start makes with these verdicts, the first two builds in the slots.
        let shas = record.builds.map(\.build) + [String(repeating: "0", count: 64), String(repeating: "1", count: 64)]
        let manifest = Manifest(appID: "fuzz", current: .init(version: "2", build: "", abiStamp: "", size: 1, sha256: shas[0]),
                                previous: .init(version: "1", build: "", abiStamp: "", size: 1, sha256: shas[1]))
        for slot in BuildSlot.allCases {
            let state = LoadedState(state: PersistedState(rollback: slot == .previous, source: .cli, reason: nil, changedAt: 0))
            if let plan = try? StartPlan.make(state: state, health: record, manifest: manifest, forcedSlot: nil) {
                lines.append(plan.health.message ?? plan.decision.explanation)
            }
        }
        let again: HealthRecord
        do { again = try HealthRecord.parse(record.serialized(), path: path) } catch {
            throw FuzzFailure("the serialized health record does not parse: \(error.message)")
        }
        try check(again == record, "the health record changed in a round trip")
        return .parsed(lines.joined(separator: "\n"))
    }

    /// `history.log`: every line, formatted as `rollbackctl history` prints it, round-tripped.
    static func history(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let (events, unreadable) = HistoryLog.parse(bytes)
        var lines: [String] = []
        for event in events {
            lines.append("\(formatUTC(event.time)) \(formatRFC3339(event.time)) \(event.kind.rawValue) \(event.from.rawValue) -> \(event.to.rawValue) \(event.source.rawValue) \(event.reason ?? "")")
            let line = event.serialized()
            try check(line.hasSuffix("\n") && line.dropLast().split(separator: "\n", omittingEmptySubsequences: false).count == 1,
                      "a serialized history event is not one line: \(line.debugDescription)")
            try check(SwitchHistoryEvent(line: line.dropLast()) == event, "a history event changed in a round trip: \(line.debugDescription)")
        }
        let again = HistoryLog.parse(Array(events.map { $0.serialized() }.joined().utf8))
        try check(again.events == events && again.unreadableLines == 0, "the rewritten history does not read back the same")
        return .parsed("\(events.count) events, \(unreadable) unreadable\n" + lines.joined(separator: "\n"))
    }

    /// `verified-slots`: every entry, round-tripped.
    static func verifiedSlots(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let entries = VerifiedCache.parse(bytes)
        let again = VerifiedCache.parse(VerifiedCache.serialize(entries))
        try check(again == entries, "the verified-slots entries changed in a round trip")
        return .parsed(entries.map { "\($0.file) \($0.fingerprint.size) \($0.sha256) \($0.bound ?? "-")" }.joined(separator: "\n"))
    }

    /// `remote`: parse, the status lines' times, round-trip.
    static func remote(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let record: RemoteRecord
        do { record = try RemoteRecord.parse(bytes, path: path) } catch { return try rejected(error.message) }
        let times = [record.lastAttemptAt, record.lastSuccessAt].map { $0.map { formatUTC($0) + " " + formatRFC3339($0) } ?? "never" }
        let again: RemoteRecord
        do { again = try RemoteRecord.parse(record.serialized(), path: path) } catch {
            throw FuzzFailure("the serialized remote record does not parse: \(error.message)")
        }
        try check(again == record, "the remote record changed in a round trip")
        return .parsed("\(record.outcome ?? "-") \(record.acceptedSerial.map { String($0) } ?? "-") \(times.joined(separator: " "))")
    }

    /// `data-state`: parse, the readability checks the launcher makes, round-trip.
    static func dataState(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let data: DataState
        do { data = try DataState.parse(bytes, path: path) } catch { return try rejected(error.message) }
        let readable = ["0", "1.1.0", "1.2.0", "99999999999999999999.0", data.publishedBy, data.rollbackTo].map { data.isReadable(by: $0) }
        let order = DottedVersion.compare(data.publishedBy, data.rollbackTo)
        try check(order == -DottedVersion.compare(data.rollbackTo, data.publishedBy), "DottedVersion.compare is not antisymmetric for \(data.publishedBy) and \(data.rollbackTo)")
        let again: DataState
        do { again = try DataState.parse(data.serialized(), path: path) } catch {
            throw FuzzFailure("the serialized data state does not parse: \(error.message)")
        }
        try check(again == data, "the data state changed in a round trip")
        return .parsed("\(data.plan.rawValue) \(data.publishedAt.map(formatUTC) ?? "-") \(readable) \(order)")
    }

    /// `supervisor`: parse, the status lines' times, round-trip.
    static func supervisor(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let record: SupervisorRecord
        do { record = try SupervisorRecord.parse(bytes, path: path) } catch { return try rejected(error.message) }
        let times = [record.startedAt, record.childStartedAt].map { $0.map { formatRFC3339($0) } ?? "-" }
        let again: SupervisorRecord
        do { again = try SupervisorRecord.parse(record.serialized(), path: path) } catch {
            throw FuzzFailure("the serialized supervisor record does not parse: \(error.message)")
        }
        try check(again == record, "the supervisor record changed in a round trip")
        return .parsed("pid \(record.pid) restarts \(record.restarts &+ 1) \(times.joined(separator: " "))")
    }

    /// `probation`: parse, what `status` shows (times, seconds left), a serialize/re-parse
    /// round trip (the stored text is already cut to its limits, so a second trip is exact).
    static func probation(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let record: ProbationRecord
        do { record = try ProbationRecord.parse(bytes, path: path) } catch { return try rejected(error.message) }
        let times = [record.startedAt, record.endsAt].map { formatRFC3339($0 / 1000) + " " + formatUTC($0 / 1000) }
        let left = max(0, (record.endsAt - 1_800_000_000_000 + 999) / 1000)
        let again: ProbationRecord
        do { again = try ProbationRecord.parse(record.serialized(), path: path) } catch {
            throw FuzzFailure("the serialized probation record does not parse: \(error.message)")
        }
        try check(again.serialized() == record.serialized(), "the probation record changed in a round trip")
        let checks = record.checks.map { "\($0.name)=\($0.phase)@\(formatRFC3339($0.at / 1000))" }
        return .parsed("\(record.slot.rawValue) \(record.state.rawValue) \(record.windowSeconds) s, \(left) s left, \(times.joined(separator: " ")): \(checks.joined(separator: ","))")
    }
}
