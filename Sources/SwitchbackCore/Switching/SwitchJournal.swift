#if canImport(Glibc)
import Glibc
#endif

/// A switch that converts the data, in progress: `switch.pending` in the state directory.
///
/// A switch to the previous slot changes two things that cannot be written in one atomic
/// step: the app's data (converted back by the current build) and the flag. The journal is
/// written, durably, before the data is touched and removed in the same locked step that
/// writes the flag, so a failure or a `kill -9` in between leaves it behind, and the next
/// `rollbackctl` command or start finishes the switch or undoes it (`Switcher.recover`).
///
/// Only a switch to the previous slot converts the data, so only one is journalled: the
/// format's `rollback` line is always `true`, and a journal that says otherwise is damaged
/// (it was once read as a rollforward by status and finished as a rollback by the start).
public struct SwitchJournal: Sendable, Equatable {
    public var source: ChoiceSource
    public var reason: String?
    /// The operator asked for `--force`.
    public var force: Bool
    public var startedAt: Int64
    /// The build the switch moves away from: a journal about another bundle is stale.
    public var fromBuild: String

    public init(source: ChoiceSource, reason: String?, force: Bool, startedAt: Int64, fromBuild: String) {
        self.source = source
        self.reason = reason
        self.force = force
        self.startedAt = startedAt
        self.fromBuild = fromBuild
    }

    /// Whether the start that finds this journal finishes the switch rather than undoing it.
    /// It converts the data first (`Switcher.recover`, the current build's downgrade), which
    /// is refused when that build cannot be loaded (`currentSlotProblem`) or the data has no
    /// way back (`conversionRefused`: the plan the current build published); `--force`
    /// switches anyway. `InstallOnDisk` plans the next start from this, so status and the
    /// metrics name the slot the start runs; a conversion that fails for another reason is
    /// known only once it ran.
    public func finishes(currentSlotProblem: String?, conversionRefused: Bool) -> Bool {
        force || (currentSlotProblem == nil && !conversionRefused)
    }

    public static func path(in directory: StateDirectory) -> String { directory.path + "/switch.pending" }

    public func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("format", "1")
        text.append("rollback", "true")
        text.append("source", source.rawValue)
        if let reason { text.append("reason", Limits.truncated(reason)) }
        text.append("force", force ? "true" : "false")
        text.append("started_at", String(startedAt))
        text.append("from.sha256", fromBuild)
        text.append("end", "ok")
        return text.serialized()
    }

    /// Parses a journal; throws `.stateInvalid` for anything damaged or out of range.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> SwitchJournal {
        let invalid = SwitchbackError(.stateInvalid, "The switch journal \(path) is damaged.", path: path)
        let text = try KeyValueText.parse(bytes, describing: "The switch journal \(path)")
        guard text["format"] == "1", text["end"] == "ok", text["rollback"] == "true",
              let source = text["source"].flatMap(ChoiceSource.init(rawValue:)),
              let started = text["started_at"].flatMap({ Int64($0) }), ValueRange.unixTime.contains(started),
              let from = text["from.sha256"], BuildIdentity.isSHA256(from) else { throw invalid }
        let reason = text["reason"]
        if let reason, reason.utf8.count > Limits.storedReasonBytes { throw invalid }
        return SwitchJournal(source: source, reason: reason, force: text["force"] == "true",
                             startedAt: started, fromBuild: from)
    }

    /// The journal in `directory`, if a switch was interrupted; a damaged one is returned as
    /// the error, so the caller can remove it and say so.
    public static func load(in directory: StateDirectory) -> Result<SwitchJournal, SwitchbackError>? {
        let path = path(in: directory)
        do {
            guard let bytes = try FileSystem.read(path, limit: 16 << 10) else { return nil }
            return .success(try parse(bytes, path: path))
        } catch {
            return .failure(error)
        }
    }

    /// Whether a journal exists: one `access(2)`, cheap enough for every start.
    public static func exists(in directory: StateDirectory) -> Bool {
        access(path(in: directory), F_OK) == 0
    }
}
