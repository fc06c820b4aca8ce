#if canImport(Glibc)
import Glibc
#endif

/// A switch to the previous slot handed to the running supervisor (`switch.request` in the
/// state directory) because the data must be converted back while a child of the current
/// build serves: `Switcher.perform` writes it and waits for the answer (`switch.answer`); the
/// supervisor stops its child, runs the switch itself once no child serves, answers, and
/// starts the previous slot (docs/supervise.md, "Live switches").
///
///     id=4711-1795326000123
///     source=cli
///     reason=1.2.0 loses notes
///     force=false
///     command=rollbackctl rollback
///     from_build=<the current build's SHA-256>
///     end=ok
public struct SwitchRequest: Sendable, Equatable {
    /// Names the request; its answer carries the same.
    public var id: String
    public var source: ChoiceSource
    public var reason: String?
    public var force: Bool
    /// What the user ran, for the advice in a refusal.
    public var command: String
    /// The current build the request was made against: a supervisor of another bundle ignores it.
    public var fromBuild: String

    public init(id: String, source: ChoiceSource, reason: String?, force: Bool, command: String, fromBuild: String) {
        self.id = id
        self.source = source
        self.reason = reason
        self.force = force
        self.command = command
        self.fromBuild = fromBuild
    }

    public static func path(in directory: StateDirectory) -> String { directory.path + "/switch.request" }

    public func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("id", id)
        text.append("source", source.rawValue)
        if let reason { text.append("reason", Limits.truncated(reason)) }
        text.append("force", force ? "true" : "false")
        text.append("command", command)
        text.append("from_build", fromBuild)
        text.append("end", "ok")
        return text.serialized()
    }

    /// Parses the file; throws `.stateInvalid` for a torn or foreign one.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> SwitchRequest {
        let text = try KeyValueText.parse(bytes, describing: "The switch request \(path)")
        guard text["end"] == "ok", let id = text["id"], !id.isEmpty,
              let source = text["source"].flatMap(ChoiceSource.init(rawValue:)), let fromBuild = text["from_build"] else {
            throw SwitchbackError(.stateInvalid, "The switch request \(path) is truncated or not a Switchback file; it was removed: run the command again.", path: path)
        }
        return SwitchRequest(id: id, source: source, reason: text["reason"], force: text["force"] == "true",
                             command: text["command"] ?? "rollbackctl rollback", fromBuild: fromBuild)
    }

    /// The supervisor's answer (`switch.answer`): what `Switcher.perform` came to in the supervisor.
    public struct Answer: Sendable, Equatable {
        /// The request answered.
        public var id: String
        /// `switched`, `refused` or `error`.
        public var status: String
        /// The refusal or the error's sentence.
        public var message: String?
        public var warning: String?
        /// Whether the flag changed (`switched`).
        public var changed: Bool
        /// Where a damaged state file was moved.
        public var damagedFileMovedTo: String?
        /// The error's code (`error`).
        public var errorCode: String?
        public var downgrade: DataDowngrade.Outcome?

        public init(id: String, status: String, message: String? = nil, warning: String? = nil, changed: Bool = false,
                    damagedFileMovedTo: String? = nil, errorCode: String? = nil, downgrade: DataDowngrade.Outcome? = nil) {
            self.id = id
            self.status = status
            self.message = message
            self.warning = warning
            self.changed = changed
            self.damagedFileMovedTo = damagedFileMovedTo
            self.errorCode = errorCode
            self.downgrade = downgrade
        }

        public static func path(in directory: StateDirectory) -> String { directory.path + "/switch.answer" }

        public func serialized() -> [UInt8] {
            var text = KeyValueText()
            text.append("id", id)
            text.append("status", status)
            if let message { text.append("message", Limits.truncated(message)) }
            if let warning { text.append("warning", Limits.truncated(warning)) }
            text.append("changed", changed ? "true" : "false")
            if let damagedFileMovedTo { text.append("damaged_moved_to", damagedFileMovedTo) }
            if let errorCode { text.append("error_code", errorCode) }
            if let downgrade {
                text.append("downgrade", Self.name(downgrade.status))
                if let floor = downgrade.readerFloor { text.append("downgrade_reader_floor", floor) }
                if let note = downgrade.message { text.append("downgrade_message", Limits.truncated(note)) }
                for (index, step) in downgrade.undone.enumerated() {
                    text.append("undone_\(index)_method", step.method.rawValue)
                    text.append("undone_\(index)_step", step.step)
                    if let archive = step.archive { text.append("undone_\(index)_archive", archive) }
                }
            }
            text.append("end", "ok")
            return text.serialized()
        }

        public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> Answer {
            let text = try KeyValueText.parse(bytes, describing: "The switch answer \(path)")
            guard text["end"] == "ok", let id = text["id"], let status = text["status"] else {
                throw SwitchbackError(.stateInvalid, "The switch answer \(path) is truncated or not a Switchback file.", path: path)
            }
            var answer = Answer(id: id, status: status, message: text["message"], warning: text["warning"], changed: text["changed"] == "true",
                                damagedFileMovedTo: text["damaged_moved_to"], errorCode: text["error_code"])
            if let name = text["downgrade"], let status = Self.status(name) {
                var outcome = DataDowngrade.Outcome(status: status, readerFloor: text["downgrade_reader_floor"], message: text["downgrade_message"])
                var index = 0
                while let method = text["undone_\(index)_method"].flatMap(SwitchHistoryEvent.Kind.init(rawValue:)),
                      let step = text["undone_\(index)_step"] {
                    outcome.undone.append(.init(method: method, step: step, archive: text["undone_\(index)_archive"]))
                    index += 1
                }
                answer.downgrade = outcome
            }
            return answer
        }

        static func name(_ status: DataDowngrade.Status) -> String {
            switch status {
            case .done: return "done"
            case .refused: return "refused"
            case .failed: return "failed"
            case .unavailable: return "unavailable"
            }
        }

        static func status(_ name: String) -> DataDowngrade.Status? {
            switch name {
            case "done": return .done
            case "refused": return .refused
            case "failed": return .failed
            case "unavailable": return .unavailable
            default: return nil
            }
        }
    }
}
