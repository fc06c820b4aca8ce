#if canImport(Glibc)
import Glibc
#endif

/// What a running supervisor publishes in `supervisor` in the state directory, for
/// `rollbackctl status`. Written without fsync (it describes a live process); removed when
/// the supervisor exits.
public struct SupervisorRecord: Sendable, Equatable {
    public var pid: Int32
    public var startedAt: Int64
    public var childPID: Int32?
    public var childSlot: BuildSlot?
    public var childStartedAt: Int64?
    public var restarts: Int

    public init(pid: Int32, startedAt: Int64, childPID: Int32?, childSlot: BuildSlot?, childStartedAt: Int64?, restarts: Int) {
        self.pid = pid
        self.startedAt = startedAt
        self.childPID = childPID
        self.childSlot = childSlot
        self.childStartedAt = childStartedAt
        self.restarts = restarts
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
                                restarts: try text.integer("restarts", in: ValueRange.count, invalid: invalid) ?? 0)
    }
}
