#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem
import SwitchbackFiles

/// The hooks' queue in the state directory (`hooks/`), between the process that records an
/// event and the one that delivers it:
///
/// - `hooks/queue/TIME-ID.json`: one file per event not yet delivered (TIME: Unix
///   nanoseconds, 20 digits, so names sort in the order the events were recorded, under the
///   state lock), written durably: a queue that survives a crash or a restart;
/// - `hooks/dropped`: how many events were not queued because the queue already held
///   ``limit`` (a deliverer that cannot run, a receiver down for days);
/// - `hooks/status`: what the deliverer did (`HookStatus`), for `rollbackctl status` and the
///   metrics.
///
/// The recording process only writes the file and starts the deliverer, detached
/// (`rollbackctl-remote deliver-hooks`): a hook that hangs, fails or points at a closed
/// port never delays a switch.
public struct HookQueue: Sendable {
    public let directory: StateDirectory

    /// The most events the queue holds; past it, new events are counted in `dropped`.
    public static let limit = 1000

    public init(directory: StateDirectory) {
        self.directory = directory
    }

    public var path: String { directory.path + "/hooks" }
    public var queuePath: String { path + "/queue" }
    /// Held (`flock`) by the one deliverer that runs at a time.
    public var lockPath: String { path + "/deliver.lock" }
    public var droppedPath: String { path + "/dropped" }

    /// Queues `event` (the caller holds the state lock). Returns a sentence when it could not.
    @discardableResult
    public func enqueue(_ event: HookEvent) -> String? {
        do {
            let queue = try FileSystem.directory(queuePath, what: "hook queue directory", creating: true)
            if queue.names().count >= Self.limit {
                try FileSystem.replace(droppedPath, with: Array(String(dropped + 1).utf8), durable: false)
                return "the hook queue \(queuePath) already holds \(Self.limit) events; event \(event.id) was dropped."
            }
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let nanoseconds = String(UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec))
            let name = String(repeating: "0", count: max(0, 20 - nanoseconds.utf8.count)) + nanoseconds + "-" + event.id + ".json"
            try FileSystem.replace(queuePath + "/" + name, with: Array((event.json + "\n").utf8), durable: true, what: "hook queue directory")
            return nil
        } catch {
            return error.message
        }
    }

    /// The queued events' file names, oldest first.
    public func pending() -> [String] {
        guard let queue = try? FileSystem.directory(queuePath, what: "hook queue directory") else { return [] }
        // A file being written is NAME.tmp-PID: not yet an event.
        return queue.names().filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
    }

    /// How many events were dropped so far.
    public var dropped: Int {
        (try? FileSystem.read(droppedPath, limit: 64)).flatMap { $0 }.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
    }

    /// Removes a delivered (or given up) event.
    public func remove(_ name: String) {
        try? FileSystem.remove(queuePath + "/" + name)
    }

    /// The event file's bytes.
    public func read(_ name: String) -> [UInt8]? {
        (try? FileSystem.read(queuePath + "/" + name, limit: 64 << 10)) ?? nil
    }
}

/// What the hook deliverer did, kept in `hooks/status` (`KeyValueText`): counts, and the
/// last failure with its sentence. `rollbackctl status` shows it.
public struct HookStatus: Sendable, Equatable {
    public var delivered = 0
    public var failed = 0
    /// The sentence of the last delivery that failed for good (after its retries).
    public var lastFailure: String?
    /// Unix seconds.
    public var lastFailureAt: Int64?
    public var lastDeliveredAt: Int64?

    public init() {}

    public static func path(in directory: StateDirectory) -> String { directory.path + "/hooks/status" }

    public static func load(in directory: StateDirectory) -> HookStatus {
        guard let bytes = (try? FileSystem.read(path(in: directory), limit: 16 << 10)) ?? nil,
              let text = try? KeyValueText.parse(bytes, describing: "hooks/status") else { return HookStatus() }
        var status = HookStatus()
        status.delivered = text["delivered"].flatMap { Int($0) } ?? 0
        status.failed = text["failed"].flatMap { Int($0) } ?? 0
        status.lastFailure = text["last_failure"]
        status.lastFailureAt = text["last_failure_at"].flatMap { Int64($0) }
        status.lastDeliveredAt = text["last_delivered_at"].flatMap { Int64($0) }
        return status
    }

    public func save(in directory: StateDirectory) throws(SwitchbackError) {
        var text = KeyValueText()
        text.append("delivered", String(delivered))
        text.append("failed", String(failed))
        if let lastDeliveredAt { text.append("last_delivered_at", String(lastDeliveredAt)) }
        if let lastFailure { text.append("last_failure", Limits.truncated(lastFailure)) }
        if let lastFailureAt { text.append("last_failure_at", String(lastFailureAt)) }
        try FileSystem.replace(Self.path(in: directory), with: text.serialized(), durable: false)
    }
}
