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

    /// A stop-first switch: under way (`pausedMilliseconds` nil) or the last one that happened.
    public struct LastSwitch: Sendable, Equatable {
        /// `stop-first`.
        public var path: String
        public var from: BuildSlot
        public var to: BuildSlot
        public var fromVersion: String
        public var toVersion: String
        /// The path's clause: why the switch could not be start-first.
        public var why: String
        /// The pause, from the drain to the target's readiness; nil while it runs.
        public var pausedMilliseconds: Int?
        /// When it ended (Unix seconds), or began while it runs.
        public var at: Int64
        /// Its moments in Unix milliseconds: the serving child drained, the last old child gone
        /// (a conversion back begins), the target started (a conversion back has ended; a
        /// forward one begins inside it), the target ready.
        public var drainedAtMilliseconds: Int64? = nil
        public var stoppedAtMilliseconds: Int64? = nil
        public var targetStartedAtMilliseconds: Int64? = nil
        public var readyAtMilliseconds: Int64? = nil

        public init(path: String, from: BuildSlot, to: BuildSlot, fromVersion: String, toVersion: String, why: String,
                    pausedMilliseconds: Int?, at: Int64) {
            self.path = path
            self.from = from
            self.to = to
            self.fromVersion = fromVersion
            self.toVersion = toVersion
            self.why = why
            self.pausedMilliseconds = pausedMilliseconds
            self.at = at
        }

        /// "stop-first, 1.2.0 → 1.1.9: the data (reader floor 1.2.0) must be converted back for 1.1.9; paused 412 ms"
        public var sentence: String {
            "\(path), \(fromVersion) → \(toVersion): \(why)" + (pausedMilliseconds.map { "; paused \($0) ms" } ?? "")
        }

        func append(to text: inout KeyValueText, prefix: String) {
            text.append("\(prefix)_path", path)
            text.append("\(prefix)_from", from.rawValue)
            text.append("\(prefix)_to", to.rawValue)
            text.append("\(prefix)_from_version", fromVersion)
            text.append("\(prefix)_to_version", toVersion)
            text.append("\(prefix)_why", Limits.truncated(why))
            if let pausedMilliseconds { text.append("\(prefix)_paused_ms", String(pausedMilliseconds)) }
            text.append("\(prefix)_at", String(at))
            for (key, value) in [("drained", drainedAtMilliseconds), ("stopped", stoppedAtMilliseconds),
                                 ("target_started", targetStartedAtMilliseconds), ("ready", readyAtMilliseconds)] {
                if let value { text.append("\(prefix)_\(key)_at_ms", String(value)) }
            }
        }

        static func parse(_ text: KeyValueText, prefix: String, invalid: (String) -> SwitchbackError) throws(SwitchbackError) -> LastSwitch? {
            guard let path = text["\(prefix)_path"], let from = text["\(prefix)_from"].flatMap(BuildSlot.init(rawValue:)),
                  let to = text["\(prefix)_to"].flatMap(BuildSlot.init(rawValue:)),
                  let at = try text.integer("\(prefix)_at", in: ValueRange.unixTime, invalid: invalid) else { return nil }
            var record = LastSwitch(path: path, from: from, to: to, fromVersion: text["\(prefix)_from_version"] ?? "",
                                    toVersion: text["\(prefix)_to_version"] ?? "", why: text["\(prefix)_why"] ?? "",
                                    pausedMilliseconds: try text.integer("\(prefix)_paused_ms", in: ValueRange.duration, invalid: invalid), at: at)
            let milliseconds: ClosedRange<Int64> = 0...(ValueRange.unixTime.upperBound * 1000)
            record.drainedAtMilliseconds = try text.integer("\(prefix)_drained_at_ms", in: milliseconds, invalid: invalid)
            record.stoppedAtMilliseconds = try text.integer("\(prefix)_stopped_at_ms", in: milliseconds, invalid: invalid)
            record.targetStartedAtMilliseconds = try text.integer("\(prefix)_target_started_at_ms", in: milliseconds, invalid: invalid)
            record.readyAtMilliseconds = try text.integer("\(prefix)_ready_at_ms", in: milliseconds, invalid: invalid)
            return record
        }
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
    /// The stop-first switch under way: connections wait while no child serves (`pause_*` keys).
    public var pause: LastSwitch?
    /// The last stop-first switch that happened (`last_switch_*` keys).
    public var lastSwitch: LastSwitch?
    /// The directory of the release the supervisor acts for (resolved): the one it started
    /// from, or one installed under it since (nil in records from before this was published).
    public var bundle: String?
    /// When the supervisor's process started, in clock ticks after boot (`/proc/PID/stat`
    /// field 22), and the device and inode of the executable it runs: what
    /// `SupervisorIdentity` checks the pid's process against (nil in records from before).
    public var startTicks: Int64?
    public var executableDevice: UInt64?
    public var executableInode: UInt64?

    public init(pid: Int32, startedAt: Int64, childPID: Int32?, childSlot: BuildSlot?, childStartedAt: Int64?, restarts: Int,
                childReady: Bool? = nil, candidatePID: Int32? = nil, candidateSlot: BuildSlot? = nil, switchFailure: SwitchFailure? = nil,
                pause: LastSwitch? = nil, lastSwitch: LastSwitch? = nil) {
        self.pause = pause
        self.lastSwitch = lastSwitch
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
        pause?.append(to: &text, prefix: "pause")
        lastSwitch?.append(to: &text, prefix: "last_switch")
        if let bundle { text.append("bundle", bundle) }
        if let startTicks { text.append("start_ticks", String(startTicks)) }
        if let executableDevice, let executableInode {
            text.append("executable_device", String(executableDevice))
            text.append("executable_inode", String(executableInode))
        }
        return text.serialized()
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
        var record = SupervisorRecord(pid: pid, startedAt: started,
                                childPID: try text.integer("child_pid", in: ValueRange.processID, invalid: invalid),
                                childSlot: text["child_slot"].flatMap(BuildSlot.init(rawValue:)),
                                childStartedAt: try text.integer("child_started_at", in: ValueRange.unixTime, invalid: invalid),
                                restarts: try text.integer("restarts", in: ValueRange.count, invalid: invalid) ?? 0,
                                childReady: text["child_ready"].map { $0 == "true" },
                                candidatePID: try text.integer("candidate_pid", in: ValueRange.processID, invalid: invalid),
                                candidateSlot: text["candidate_slot"].flatMap(BuildSlot.init(rawValue:)),
                                switchFailure: try switchFailure(text, invalid: invalid),
                                pause: try LastSwitch.parse(text, prefix: "pause", invalid: invalid),
                                lastSwitch: try LastSwitch.parse(text, prefix: "last_switch", invalid: invalid))
        record.bundle = text["bundle"]
        record.startTicks = try text.integer("start_ticks", in: 0...Int64.max, invalid: invalid)
        if let device = text["executable_device"].flatMap(UInt64.init), let inode = text["executable_inode"].flatMap(UInt64.init) {
            record.executableDevice = device
            record.executableInode = inode
        }
        return record
    }

    /// Whether the process `pid` exists and has not exited: a zombie, which `kill(pid, 0)`
    /// still finds until its parent reaps it, has exited (`/proc/PID/stat`, field 3: `Z`).
    /// For a supervisor's child, which dies with it; whether a process is the supervisor is
    /// `SupervisorIdentity`'s question, never this one.
    static func isRunning(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let state = ProcessFacts.procStat(pid)?.state else { return true }
        return state != UInt8(ascii: "Z") && state != UInt8(ascii: "X")
    }

    private static func switchFailure(_ text: KeyValueText, invalid: (String) -> SwitchbackError) throws(SwitchbackError) -> SwitchFailure? {
        guard let slot = text["switch_failed_slot"].flatMap(BuildSlot.init(rawValue:)),
              let at = try text.integer("switch_failed_at", in: ValueRange.unixTime, invalid: invalid) else { return nil }
        return SwitchFailure(slot: slot, at: at, reason: text["switch_failed_reason"] ?? "")
    }
}
