/// The health verdicts on builds, persisted as `health` in the state directory, keyed by
/// each build's SHA-256 (not by slot), so that a verdict follows its build across releases.
/// At most `buildLimit` builds are kept: the verdicts changed longest ago are dropped first.
public struct HealthRecord: Sendable, Equatable {
    /// Format 2 keys verdicts by build; format 1 (by slot) is read and converted.
    public static let currentFormat = 2
    /// The most builds remembered.
    public static let buildLimit = 32

    /// Every remembered verdict, in file order.
    public private(set) var builds: [SlotHealth]

    public init(builds: [SlotHealth] = []) { self.builds = builds }

    /// The verdict on `build`; a build not seen before is fresh, on trial with `tries`.
    public func health(of build: BuildIdentity, tries: Int) -> SlotHealth {
        if var known = builds.first(where: { $0.build == build.sha256 }) {
            if known.version == nil { known.version = build.version }
            return known
        }
        return .fresh(build: build.sha256, tries: tries, version: build.version)
    }

    /// The verdict on the build in `slot` of `manifest`.
    public func health(of slot: BuildSlot, in manifest: Manifest) -> SlotHealth {
        health(of: BuildIdentity(manifest, slot), tries: manifest.trialTries)
    }

    /// A verdict an operator, the launcher, the supervisor or a bake window gives a build.
    public enum Mark: Sendable, Equatable {
        /// Good: its tries are refilled (no unmarked start counts any more) and `lastGoodAt` is now.
        case good
        /// Bad, by whom: `.auto` (crashes, tries run out, a failed bake window), `.cli` or
        /// `.remote` (a rejection, which automatic rollback never undoes).
        case bad(by: ChoiceSource)
    }

    /// The one way a verdict is written (the launcher, the supervisor, a bake window, a
    /// switch's rejection, `rollbackctl mark-good|mark-bad`): every writer sets the same fields
    /// the same way. With `keepingRejection`, a build already rejected keeps who rejected it
    /// and why. Returns the verdict as recorded.
    @discardableResult
    public mutating func mark(_ build: BuildIdentity, _ mark: Mark, tries: Int, note: String, at now: Int64,
                              keepingRejection: Bool = false) -> SlotHealth {
        var health = self.health(of: build, tries: tries)
        if keepingRejection && health.isRejected { return health }
        switch mark {
        case .good:
            health.verdict = .good
            health.markedBy = nil
            health.failedStarts = 0
            health.lastGoodAt = now
        case .bad(let by):
            health.verdict = .bad
            health.markedBy = by
        }
        health.changedAt = now
        health.note = note
        set(health)
        return health
    }

    /// Records `health` for its build, replacing what was known about that build.
    public mutating func set(_ health: SlotHealth) {
        if let index = builds.firstIndex(where: { $0.build == health.build }) {
            builds[index] = health
        } else {
            builds.append(health)
        }
        while builds.count > Self.buildLimit, let oldest = builds.indices.min(by: { (builds[$0].changedAt ?? 0) < (builds[$1].changedAt ?? 0) }) {
            builds.remove(at: oldest)
        }
    }

    /// The file's text: one block per build, each starting with its `build=` line.
    public func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("format", String(Self.currentFormat))
        for health in builds {
            text.append("build", health.build)
            if let version = health.version { text.append("version", version) }
            switch health.verdict {
            case .good: text.append("verdict", "good")
            case .bad: text.append("verdict", "bad")
            case .trial(let tries):
                text.append("verdict", "trial")
                text.append("tries_left", String(tries))
            }
            if let by = health.markedBy { text.append("marked_by", by.rawValue) }
            text.append("failed_starts", String(health.failedStarts))
            if let at = health.lastGoodAt { text.append("last_good_at", String(at)) }
            if let at = health.changedAt { text.append("changed_at", String(at)) }
            if let note = health.note { text.append("note", Limits.truncated(note)) }
        }
        text.append("end", "ok")
        return text.serialized()
    }

    /// Parses the file; throws `.stateInvalid` for damaged text or out-of-range numbers.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> HealthRecord {
        func invalid(_ what: String) -> SwitchbackError {
            SwitchbackError(.stateInvalid, "The health file \(path) \(what).", path: path)
        }
        let text = try KeyValueText.parse(bytes, describing: "The health file \(path)")
        guard let format = text["format"].flatMap({ Int($0) }), format >= 1, text["end"] == "ok" else {
            throw invalid("is damaged or truncated")
        }
        if format == 1 { return try parseFormat1(text, invalid: invalid) }
        // Blocks of fields, each opened by a `build=` line.
        // (Indices into the text, not arrays of pairs: see KeyValueText.)
        var starts: [Int] = []
        for index in 0..<text.count where !text.key(at: index, is: "format") && !text.key(at: index, is: "end") {
            if text.key(at: index, is: "build") { starts.append(index) }
            guard !starts.isEmpty else { throw invalid("has a \(text.key(at: index).prefix(40)) line before any build line") }
        }
        guard starts.count <= buildLimit * 4 else { throw invalid("has more than \(buildLimit * 4) builds") }
        var record = HealthRecord()
        for (number, start) in starts.enumerated() {
            let end = number + 1 < starts.count ? starts[number + 1] : text.count
            func field(_ key: String) -> String? { text.index(of: key, in: start..<end).map { text.value(at: $0) } }
            record.set(try health(build: text.value(at: start), field, prefix: "", invalid: invalid))
        }
        return record
    }

    /// Format 1: one verdict per slot (`current.build`, `current.verdict`, ...).
    private static func parseFormat1(_ text: KeyValueText, invalid: (String) -> SwitchbackError) throws(SwitchbackError) -> HealthRecord {
        var record = HealthRecord()
        for slot in BuildSlot.allCases {
            let p = slot.rawValue + "."
            guard let build = text[p + "build"] else { continue }
            record.set(try health(build: build, { text[p + $0] }, prefix: p, invalid: invalid))
        }
        return record
    }

    private static func health(build: String, _ field: (String) -> String?, prefix p: String,
                               invalid: (String) -> SwitchbackError) throws(SwitchbackError) -> SlotHealth {
        guard BuildIdentity.isSHA256(build) else { throw invalid("has an invalid \(p)build line") }
        func count(_ key: String) throws(SwitchbackError) -> Int? {
            guard let value = field(key) else { return nil }
            guard let number = Int(value), ValueRange.count.contains(number) else { throw invalid("has an invalid \(p)\(key) line (\(value.prefix(40)))") }
            return number
        }
        func time(_ key: String) throws(SwitchbackError) -> Int64? {
            guard let value = field(key) else { return nil }
            guard let seconds = Int64(value), ValueRange.unixTime.contains(seconds) else { throw invalid("has an invalid \(p)\(key) line (\(value.prefix(40)))") }
            return seconds
        }
        let verdict: SlotHealth.Verdict
        switch field("verdict") {
        case "good": verdict = .good
        case "bad": verdict = .bad
        case "trial":
            guard let tries = try count("tries_left") else { throw invalid("has an invalid \(p)tries_left line") }
            verdict = .trial(triesLeft: tries)
        default:
            throw invalid("has an invalid \(p)verdict line")
        }
        var markedBy: ChoiceSource?
        if let value = field("marked_by") {
            guard let source = ChoiceSource(rawValue: value) else { throw invalid("has an invalid \(p)marked_by line") }
            markedBy = source
        }
        let note = field("note")
        if let note, note.utf8.count > Limits.storedReasonBytes { throw invalid("has a \(p)note longer than \(Limits.storedReasonBytes) bytes") }
        let version = field("version")
        if let version, version.utf8.count > 200 { throw invalid("has an invalid \(p)version line") }
        return SlotHealth(build: build, verdict: verdict, failedStarts: try count("failed_starts") ?? 0,
                          lastGoodAt: try time("last_good_at"), changedAt: try time("changed_at"),
                          note: note, version: version, markedBy: markedBy)
    }
}

extension HealthRecord {
    /// The verdicts a switch writes, the one rule (`StateStore.setRollback` writes them;
    /// `InstallOnDisk` applies them to plan the start that finishes an interrupted switch):
    /// - an explicit choice (not automatic) of a bad build puts it back on trial with fresh
    ///   tries: the operator's (or directive's) intent wins over an earlier verdict;
    /// - when the flag changes, a rollback by an operator or a directive marks the build it
    ///   moves away from bad (`markedBy` its source): automatic rollback never returns to it.
    /// Returns the target's verdict before, when it was put back on trial, and whether
    /// anything changed.
    @discardableResult
    public mutating func recordSwitch(rollback: Bool, source: ChoiceSource, reason: String?, flagChanges: Bool,
                                      manifest: Manifest, now: Int64) -> (rearmed: SlotHealth?, changed: Bool) {
        let from = BuildIdentity(manifest, rollback ? .current : .previous)
        let to = BuildIdentity(manifest, rollback ? .previous : .current)
        var rearmed: SlotHealth?
        let target = health(of: to, tries: manifest.trialTries)
        if source != .auto, target.isBad {
            rearmed = target
            var fresh = SlotHealth.fresh(build: to.sha256, tries: manifest.trialTries, version: to.version)
            fresh.lastGoodAt = target.lastGoodAt
            fresh.changedAt = now
            fresh.note = "put back on trial by \(rollback ? "a rollback" : "a rollforward") (\(source.rawValue))"
            set(fresh)
        }
        let marksBad = flagChanges && rollback && (source == .cli || source == .remote)
        if marksBad {
            let who = source == .cli ? "an operator rolled back from it" : "a signed remote directive rolled back from it"
            mark(from, .bad(by: source), tries: manifest.trialTries, note: reason.map { "\(who): \($0)" } ?? who,
                 at: now, keepingRejection: true)
        }
        return (rearmed, rearmed != nil || marksBad)
    }
}
