/// The health of both slots' builds, persisted as `health` in the state directory.
public struct HealthRecord: Sendable, Equatable {
    public static let currentFormat = 1

    public var current: SlotHealth?
    public var previous: SlotHealth?

    public init(current: SlotHealth? = nil, previous: SlotHealth? = nil) {
        self.current = current
        self.previous = previous
    }

    /// The verdict on the build `build` in `slot`; a build not seen before (or a slot that
    /// now holds another build) is fresh, on trial with `tries`.
    public func health(of slot: BuildSlot, build: String, tries: Int) -> SlotHealth {
        if let known = self[slot], known.build == build { return known }
        return .fresh(build: build, tries: tries)
    }

    public subscript(slot: BuildSlot) -> SlotHealth? {
        get { slot == .current ? current : previous }
        set { if slot == .current { current = newValue } else { previous = newValue } }
    }

    /// The file's text.
    public func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("format", String(Self.currentFormat))
        for slot in BuildSlot.allCases {
            guard let health = self[slot] else { continue }
            let p = slot.rawValue + "."
            text.append(p + "build", health.build)
            switch health.verdict {
            case .good: text.append(p + "verdict", "good")
            case .bad: text.append(p + "verdict", "bad")
            case .trial(let tries):
                text.append(p + "verdict", "trial")
                text.append(p + "tries_left", String(tries))
            }
            text.append(p + "failed_starts", String(health.failedStarts))
            if let at = health.lastGoodAt { text.append(p + "last_good_at", String(at)) }
            if let at = health.changedAt { text.append(p + "changed_at", String(at)) }
            if let note = health.note { text.append(p + "note", note) }
        }
        text.append("end", "ok")
        return text.serialized()
    }

    /// Parses the file; throws `.stateInvalid` for damaged text.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> HealthRecord {
        let text = try KeyValueText.parse(bytes, describing: "The health file \(path)")
        guard text["format"].flatMap({ Int($0) }) != nil, text["end"] == "ok" else {
            throw SwitchbackError(.stateInvalid, "The health file \(path) is damaged or truncated.", path: path)
        }
        var record = HealthRecord()
        for slot in BuildSlot.allCases {
            let p = slot.rawValue + "."
            guard let build = text[p + "build"] else { continue }
            let verdict: SlotHealth.Verdict
            switch text[p + "verdict"] {
            case "good": verdict = .good
            case "bad": verdict = .bad
            case "trial":
                guard let tries = text[p + "tries_left"].flatMap({ Int($0) }), tries >= 0 else {
                    throw SwitchbackError(.stateInvalid, "The health file \(path) has an invalid \(p)tries_left line.", path: path)
                }
                verdict = .trial(triesLeft: tries)
            default:
                throw SwitchbackError(.stateInvalid, "The health file \(path) has an invalid \(p)verdict line.", path: path)
            }
            record[slot] = SlotHealth(build: build, verdict: verdict,
                                      failedStarts: text[p + "failed_starts"].flatMap { Int($0) } ?? 0,
                                      lastGoodAt: text[p + "last_good_at"].flatMap { Int64($0) },
                                      changedAt: text[p + "changed_at"].flatMap { Int64($0) },
                                      note: text[p + "note"])
        }
        return record
    }
}
