#if canImport(Glibc)
import Glibc
#endif

/// What a running supervisor publishes in `supervisor` in the state directory, for
/// `rollbackctl status`. Written without fsync (it describes a live process); removed when
/// the supervisor exits.
public struct SupervisorRecord: Sendable, Equatable {
    /// The last live switch that did not happen, until one does.
    public struct SwitchFailure: Sendable, Equatable {
        public var slot: BuildSlot
        public var at: Int64
        public var reason: String
    }

    public var pid: Int32
    public var startedAt: Int64
    public var childPID: Int32?
    public var childSlot: BuildSlot?
    public var childStartedAt: Int64?
    public var restarts: Int
    /// Whether the serving child is ready (nil in records from before readiness).
    public var childReady: Bool?
    /// The new child of a live switch, while it starts.
    public var candidatePID: Int32?
    public var candidateSlot: BuildSlot?
    public var switchFailure: SwitchFailure?

    public init(pid: Int32, startedAt: Int64, childPID: Int32?, childSlot: BuildSlot?, childStartedAt: Int64?, restarts: Int,
                childReady: Bool? = nil, candidatePID: Int32? = nil, candidateSlot: BuildSlot? = nil, switchFailure: SwitchFailure? = nil) {
        self.pid = pid
        self.startedAt = startedAt
        self.childPID = childPID
        self.childSlot = childSlot
        self.childStartedAt = childStartedAt
        self.restarts = restarts
        self.childReady = childReady
        self.candidatePID = candidatePID
        self.candidateSlot = candidateSlot
        self.switchFailure = switchFailure
    }

    public static func path(in directory: StateDirectory) -> String { directory.path + "/supervisor" }

    func save(in directory: StateDirectory) {
        try? FileSystem.replace(Self.path(in: directory), with: serialized(), durable: false)
    }

    /// The file's text.
    public func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("pid", String(pid))
        text.append("started_at", String(startedAt))
        if let childPID { text.append("child_pid", String(childPID)) }
        if let childSlot { text.append("child_slot", childSlot.rawValue) }
        if let childStartedAt { text.append("child_started_at", String(childStartedAt)) }
        text.append("restarts", String(restarts))
        if let childReady { text.append("child_ready", childReady ? "true" : "false") }
        if let candidatePID { text.append("candidate_pid", String(candidatePID)) }
        if let candidateSlot { text.append("candidate_slot", candidateSlot.rawValue) }
        if let switchFailure {
            text.append("switch_failed_slot", switchFailure.slot.rawValue)
            text.append("switch_failed_at", String(switchFailure.at))
            text.append("switch_failed_reason", Limits.truncated(switchFailure.reason))
        }
        return text.serialized()
    }

    /// The record of a supervisor that is still running, or nil (none, a damaged record, or
    /// one whose process is gone).
    public static func live(in directory: StateDirectory) -> SupervisorRecord? {
        guard let bytes = try? FileSystem.read(path(in: directory), limit: 4096),
              let record = try? parse(bytes, path: path(in: directory)) else { return nil }
        guard kill(record.pid, 0) == 0 || errno == EPERM else { return nil }
        return record
    }

    /// Parses the file. Throws `.stateInvalid` when `pid` or `started_at` is missing, or any
    /// number is out of range: a pid outside `ValueRange.processID` (0 and -1 would make
    /// `kill(2)` probe a whole process group), a time outside `ValueRange.unixTime`, a restart
    /// count outside `ValueRange.count`.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> SupervisorRecord {
        func invalid(_ what: String) -> SwitchbackError {
            SwitchbackError(.stateInvalid, "The supervisor record \(path) \(what); it is ignored until the supervisor writes it again.", path: path)
        }
        let text = try KeyValueText.parse(bytes, describing: "The supervisor record \(path)")
        guard let pid = try text.integer("pid", in: ValueRange.processID, invalid: invalid),
              let started = try text.integer("started_at", in: ValueRange.unixTime, invalid: invalid) else {
            throw invalid("has no pid or started_at line")
        }
        return SupervisorRecord(pid: pid, startedAt: started,
                                childPID: try text.integer("child_pid", in: ValueRange.processID, invalid: invalid),
                                childSlot: text["child_slot"].flatMap(BuildSlot.init(rawValue:)),
                                childStartedAt: try text.integer("child_started_at", in: ValueRange.unixTime, invalid: invalid),
                                restarts: try text.integer("restarts", in: ValueRange.count, invalid: invalid) ?? 0,
                                childReady: text["child_ready"].map { $0 == "true" },
                                candidatePID: try text.integer("candidate_pid", in: ValueRange.processID, invalid: invalid),
                                candidateSlot: text["candidate_slot"].flatMap(BuildSlot.init(rawValue:)),
                                switchFailure: try switchFailure(text, invalid: invalid))
    }

    private static func switchFailure(_ text: KeyValueText, invalid: (String) -> SwitchbackError) throws(SwitchbackError) -> SwitchFailure? {
        guard let slot = text["switch_failed_slot"].flatMap(BuildSlot.init(rawValue:)),
              let at = try text.integer("switch_failed_at", in: ValueRange.unixTime, invalid: invalid) else { return nil }
        return SwitchFailure(slot: slot, at: at, reason: text["switch_failed_reason"] ?? "")
    }
}
