import SwitchbackFiles
/// The persisted choice: which build runs, who chose it and why. Written only by
/// rollbackctl, an applied directive, automatic rollback and a superseding release, always
/// with `StateStore.save`, so it is never half-written.
///
/// A choice is about builds, not slot positions: it records the build it moved away from
/// and the build it moved to (format 2). A bundle whose current build is not the one a
/// rollback moved away from is a new release, which supersedes the rollback
/// (see `StartPlan`).
public struct PersistedState: Sendable, Equatable {
    /// The format this version of Switchback writes. Format 1 had no builds.
    public static let currentFormat = 2

    /// True when the previous slot should run.
    public var rollback: Bool
    /// Who set the flag.
    public var source: ChoiceSource
    /// Why, in the words of whoever set it.
    public var reason: String?
    /// When it was set, in seconds since the epoch (nil for the default).
    public var changedAt: Int64?
    /// The build the choice moved away from (nil in format 1 and for the default).
    public var fromBuild: BuildIdentity?
    /// The build the choice moved to.
    public var toBuild: BuildIdentity?

    /// The state of an install nobody has switched yet: the current slot runs.
    public static let initial = PersistedState(rollback: false, source: .default, reason: nil, changedAt: nil)

    public init(rollback: Bool, source: ChoiceSource, reason: String?, changedAt: Int64?,
                fromBuild: BuildIdentity? = nil, toBuild: BuildIdentity? = nil) {
        self.rollback = rollback
        self.source = source
        self.reason = reason
        self.changedAt = changedAt
        self.fromBuild = fromBuild
        self.toBuild = toBuild
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
        if let reason { text.append("reason", Limits.truncated(reason)) }
        if let changedAt { text.append("changed_at", String(changedAt)) }
        for (name, build) in [("from", fromBuild), ("to", toBuild)] {
            guard let build else { continue }
            text.append(name + ".sha256", build.sha256)
            text.append(name + ".version", build.version)
        }
        text.append("end", "ok")
        return text.serialized()
    }

    /// Parses a state file. An empty, truncated or garbage file, or one whose numbers are out
    /// of range, throws `.stateInvalid`; a file from a newer format whose `rollback` key
    /// still reads is accepted (newer formats keep that key's meaning), otherwise it throws
    /// `.stateFromNewerFormat`.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> PersistedState {
        func invalid(_ what: String) -> SwitchbackError {
            SwitchbackError(.stateInvalid, "The state file \(path) \(what).", path: path)
        }
        if bytes.isEmpty { throw invalid("is empty") }
        let text = try KeyValueText.parse(bytes, describing: "The state file \(path)")
        guard let formatText = text["format"], let format = Int(formatText), format >= 1 else {
            throw invalid("has no valid format line")
        }
        if text["end"] != "ok" { throw invalid("is truncated (it has no end line)") }
        let rollback = text["rollback"].flatMap { $0 == "true" ? true : $0 == "false" ? false : nil }
        if let reason = text["reason"], reason.utf8.count > Limits.storedReasonBytes { throw invalid("has a reason longer than \(Limits.storedReasonBytes) bytes") }
        // The file is outside text too: a reason read back is one line, whoever wrote it.
        let reason = text["reason"].map { OutsideText($0, limit: Limits.storedReasonBytes).text }
        var changedAt: Int64?
        if let value = text["changed_at"] {
            guard let seconds = Int64(value), ValueRange.unixTime.contains(seconds) else { throw invalid("has an invalid changed_at line (\(value.prefix(40)))") }
            changedAt = seconds
        }
        func build(_ name: String) throws(SwitchbackError) -> BuildIdentity? {
            guard let sha = text[name + ".sha256"] else { return nil }
            guard BuildIdentity.isSHA256(sha) else { throw invalid("has an invalid \(name).sha256 line") }
            let version = text[name + ".version"] ?? "?"
            guard version.utf8.count <= 200 else { throw invalid("has an invalid \(name).version line") }
            return BuildIdentity(sha256: sha, version: version)
        }
        if format > currentFormat {
            guard let rollback else {
                throw SwitchbackError(.stateFromNewerFormat, "The state file \(path) was written by a newer Switchback (format \(format), this one reads \(currentFormat)).", path: path)
            }
            return PersistedState(rollback: rollback, source: text["source"].flatMap(ChoiceSource.init(rawValue:)) ?? .cli,
                                  reason: reason, changedAt: changedAt,
                                  fromBuild: try? build("from"), toBuild: try? build("to"))
        }
        guard let rollback else { throw invalid("has no valid rollback line (it may be truncated)") }
        guard let source = text["source"].flatMap(ChoiceSource.init(rawValue:)) else {
            throw invalid("has no valid source line (it may be truncated)")
        }
        return PersistedState(rollback: rollback, source: source, reason: reason, changedAt: changedAt,
                              fromBuild: try build("from"), toBuild: try build("to"))
    }
}
