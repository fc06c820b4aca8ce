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
        var text = KeyValueText()
        text.append("pid", String(pid))
        text.append("started_at", String(startedAt))
        if let childPID { text.append("child_pid", String(childPID)) }
        if let childSlot { text.append("child_slot", childSlot.rawValue) }
        if let childStartedAt { text.append("child_started_at", String(childStartedAt)) }
        text.append("restarts", String(restarts))
        try? FileSystem.replace(Self.path(in: directory), with: text.serialized(), durable: false)
    }

    /// The record of a supervisor that is still running, or nil.
    public static func live(in directory: StateDirectory) -> SupervisorRecord? {
        guard let bytes = try? FileSystem.read(path(in: directory), limit: 4096),
              let text = try? KeyValueText.parse(bytes, describing: "supervisor"),
              let pid = text["pid"].flatMap({ Int32($0) }), let started = text["started_at"].flatMap({ Int64($0) }) else { return nil }
        guard kill(pid, 0) == 0 || errno == EPERM else { return nil }
        return SupervisorRecord(pid: pid, startedAt: started, childPID: text["child_pid"].flatMap { Int32($0) },
                                childSlot: text["child_slot"].flatMap(BuildSlot.init(rawValue:)),
                                childStartedAt: text["child_started_at"].flatMap { Int64($0) },
                                restarts: text["restarts"].flatMap { Int($0) } ?? 0)
    }
}
