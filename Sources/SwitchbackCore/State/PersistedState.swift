/// The persisted rollback flag and where it came from. Written only by rollbackctl and by
/// automatic rollback, always with `StateStore.save`, so it is never half-written.
public struct PersistedState: Sendable, Equatable {
    /// The format this version of Switchback writes.
    public static let currentFormat = 1

    /// True when the previous slot should run.
    public var rollback: Bool
    /// Who set the flag.
    public var source: ChoiceSource
    /// Why, in the words of whoever set it.
    public var reason: String?
    /// When it was set, in seconds since the epoch (nil for the default).
    public var changedAt: Int64?

    /// The state of an install nobody has switched yet: the current slot runs.
    public static let initial = PersistedState(rollback: false, source: .default, reason: nil, changedAt: nil)

    public init(rollback: Bool, source: ChoiceSource, reason: String?, changedAt: Int64?) {
        self.rollback = rollback
        self.source = source
        self.reason = reason
        self.changedAt = changedAt
    }

    /// The slot this state selects.
    public var slot: BuildSlot { rollback ? .previous : .current }
}

extension PersistedState {
    /// The state file's text.
    public func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("format", String(Self.currentFormat))
        text.append("rollback", rollback ? "true" : "false")
        text.append("source", source.rawValue)
        if let reason { text.append("reason", reason) }
        if let changedAt { text.append("changed_at", String(changedAt)) }
        text.append("end", "ok")
        return text.serialized()
    }

    /// Parses a state file. An empty, truncated or garbage file throws `.stateInvalid`; a
    /// file from a newer format whose `rollback` key still reads is accepted (newer formats
    /// keep that key's meaning), otherwise it throws `.stateFromNewerFormat`.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> PersistedState {
        if bytes.isEmpty {
            throw SwitchbackError(.stateInvalid, "The state file \(path) is empty.", path: path)
        }
        let text = try KeyValueText.parse(bytes, describing: "The state file \(path)")
        guard let formatText = text["format"], let format = Int(formatText) else {
            throw SwitchbackError(.stateInvalid, "The state file \(path) has no format line.", path: path)
        }
        if text["end"] != "ok" {
            throw SwitchbackError(.stateInvalid, "The state file \(path) is truncated (it has no end line).", path: path)
        }
        let rollback = text["rollback"].flatMap { $0 == "true" ? true : $0 == "false" ? false : nil }
        if format > currentFormat {
            guard let rollback else {
                throw SwitchbackError(.stateFromNewerFormat, "The state file \(path) was written by a newer Switchback (format \(format), this one reads \(currentFormat)).", path: path)
            }
            return PersistedState(rollback: rollback, source: text["source"].flatMap(ChoiceSource.init(rawValue:)) ?? .cli,
                                  reason: text["reason"], changedAt: text["changed_at"].flatMap { Int64($0) })
        }
        guard let rollback else {
            throw SwitchbackError(.stateInvalid, "The state file \(path) has no valid rollback line (it may be truncated).", path: path)
        }
        guard let source = text["source"].flatMap(ChoiceSource.init(rawValue:)) else {
            throw SwitchbackError(.stateInvalid, "The state file \(path) has no valid source line (it may be truncated).", path: path)
        }
        var changedAt: Int64?
        if let value = text["changed_at"] {
            guard let seconds = Int64(value) else {
                throw SwitchbackError(.stateInvalid, "The state file \(path) has an invalid changed_at line.", path: path)
            }
            changedAt = seconds
        }
        return PersistedState(rollback: rollback, source: source, reason: text["reason"], changedAt: changedAt)
    }
}
