#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// The one answer to "is the process the supervisor record names this install's supervisor?"
/// Every reader of the record asks it: the hand-off of a switch that converts the data
/// (`Switcher.handOff`), `rollbackctl status`, `promote` and `abort`, and so the release
/// installed under a running supervisor (whose executable is then the old release's, moved or
/// deleted).
///
/// A process is the supervisor only when all of these hold, read from procfs after a pidfd
/// (`pidfd_open(2)`) was taken on the pid, and checked again through that pidfd after: it has
/// not exited; it started at the clock tick the record says (`/proc/PID/stat` field 22, the
/// `start_ticks` line; a pid reused, even within the same second, started later); it runs as
/// the user who owns the record file (`/proc/PID/status`, the effective uid); and its
/// executable is the very file the supervisor ran (device and inode of `/proc/PID/exe`,
/// which survive a rename and a deletion of the release). Records written before these lines
/// existed are held to the start second (±2 s, the rule before) and the uid. Anything else is stale: its
/// sentence says which check failed, and the caller ignores the record.
public enum SupervisorIdentity {
    /// What the record in a state directory comes to.
    public enum Verdict {
        /// No record, or one that cannot be read: no supervisor.
        case none
        /// A record whose process is not this install's supervisor; `sentence` says so and why.
        case stale(SupervisorRecord, sentence: String)
        /// The supervisor, with a pidfd on it for as long as the value lives.
        case live(LiveSupervisor)
    }

    /// Why a record's process is not the supervisor.
    enum Mismatch: Error, Equatable {
        case gone
        case exited
        case otherUser(uid: uid_t, owner: uid_t)
        case otherExecutable(String)
        case startedAt(ticks: Int64?, seconds: Int64?)

        func clause(_ record: SupervisorRecord) -> String {
            switch self {
            case .gone: return "no process has that pid now"
            case .exited: return "that process has exited"
            case .otherUser(let uid, let owner): return "it belongs to uid \(uid), the record to uid \(owner)"
            case .otherExecutable(let path): return "it runs \(path), not the supervisor's executable"
            case .startedAt(_, let seconds):
                let when = seconds.map { "at \(formatRFC3339($0))" } ?? "at another time"
                return "it started \(when), the supervisor at \(formatRFC3339(record.startedAt))"
            }
        }
    }

    /// Reads `directory`'s supervisor record and checks its process.
    public static func check(in directory: StateDirectory) -> Verdict {
        let path = SupervisorRecord.path(in: directory)
        guard let bytes = try? FileSystem.read(path, limit: 16 << 10),
              let record = try? SupervisorRecord.parse(bytes, path: path),
              let owner = (try? FileSystem.status(path))??.st_uid else { return .none }
        switch identify(record, owner: owner) {
        case .success(let live): return .live(live)
        case .failure(let mismatch): return .stale(record, sentence: sentence(record, mismatch))
        }
    }

    /// "The supervisor record names pid 4242, which is not this install's supervisor (it
    /// belongs to uid 998, the record to uid 0); ignoring it."
    static func sentence(_ record: SupervisorRecord, _ mismatch: Mismatch) -> String {
        "The supervisor record names pid \(record.pid), which is not this install's supervisor (\(mismatch.clause(record))); ignoring it."
    }

    /// The checks, in the order the sentence prefers (the plainest reason first).
    static func identify(_ record: SupervisorRecord, owner: uid_t) -> Result<LiveSupervisor, Mismatch> {
        guard record.pid > 1 else { return .failure(.gone) }
        let pidfd = switchback_pidfd_open(record.pid)
        let openError = errno
        if pidfd < 0 && openError == ESRCH { return .failure(.gone) }
        let live = LiveSupervisor(record: record, pidfd: pidfd)
        guard let stat = ProcessFacts.procStat(record.pid) else { return .failure(.gone) }
        guard stat.state != UInt8(ascii: "Z"), stat.state != UInt8(ascii: "X") else { return .failure(.exited) }
        if let uid = ProcessFacts.effectiveUID(record.pid), uid != owner { return .failure(.otherUser(uid: uid, owner: owner)) }
        if let device = record.executableDevice, let inode = record.executableInode,
           let file = ProcessFacts.executable(record.pid), file.device != device || file.inode != inode {
            return .failure(.otherExecutable(ProcessFacts.executablePath(record.pid) ?? "another program"))
        }
        if let ticks = record.startTicks {
            guard stat.startTicks == ticks else {
                return .failure(.startedAt(ticks: stat.startTicks, seconds: ProcessFacts.startTime(ticks: stat.startTicks)))
            }
        } else {
            let seconds = ProcessFacts.startTime(ticks: stat.startTicks)
            guard let seconds, abs(seconds - record.startedAt) <= 2 else {
                return .failure(.startedAt(ticks: stat.startTicks, seconds: seconds))
            }
        }
        // The facts were of the pidfd's process only if it still runs now.
        guard live.isRunning else { return .failure(.exited) }
        return .success(live)
    }
}

/// A supervisor that passed `SupervisorIdentity`'s checks, and a pidfd on its process held
/// until this value goes: `isRunning` asks that very process, never its pid again, so a
/// supervisor that dies while a caller talks to it is seen gone even if its pid is reused.
public final class LiveSupervisor: @unchecked Sendable {
    public let record: SupervisorRecord
    /// The pidfd, or -1 on a kernel without `pidfd_open` (before 5.3): then the pid and its
    /// start tick are asked again.
    private let pidfd: Int32

    init(record: SupervisorRecord, pidfd: Int32) {
        self.record = record
        self.pidfd = pidfd
    }

    deinit { if pidfd >= 0 { close(pidfd) } }

    public var pid: Int32 { record.pid }

    /// Whether the process has not exited (a pidfd polls readable once it has).
    public var isRunning: Bool {
        if pidfd >= 0 {
            var waiter = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
            let ready = retryingInterrupts { poll(&waiter, 1, 0) }.0
            return ready == 0
        }
        guard let stat = ProcessFacts.procStat(record.pid), stat.state != UInt8(ascii: "Z"), stat.state != UInt8(ascii: "X") else { return false }
        return record.startTicks.map { $0 == stat.startTicks } ?? true
    }

    /// Whether it acts for the bundle at `bundleRoot`: the release it publishes in its record
    /// (the one it started from, or one installed under it since), or, in a record from
    /// before that line, the bundle whose launcher it runs.
    public func actsFor(bundleRoot: String) -> Bool {
        let resolvedRoot = FileSystem.resolved(bundleRoot) ?? bundleRoot
        if let bundle = record.bundle { return bundle == resolvedRoot }
        let launcher = FileSystem.resolved(bundleRoot + "/bin/launcher") ?? bundleRoot + "/bin/launcher"
        return ProcessFacts.executablePath(record.pid) == launcher
    }
}

/// What procfs says about a process, read without the strict checks of `FileSystem.read`
/// (procfs files belong to the process's user, whoever that is).
enum ProcessFacts {
    struct Stat {
        /// Field 3: R, S, D, Z (zombie), X (dead)...
        var state: UInt8
        /// Field 22: when it started, in clock ticks after boot.
        var startTicks: Int64
    }

    /// `/proc/PID/stat`'s state and start tick; nil when there is no such process.
    static func procStat(_ pid: Int32) -> Stat? {
        guard let bytes = read("/proc/\(pid)/stat"), let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // After the command's closing parenthesis (the command may hold spaces and
        // parentheses): field 3, the state, first, so field N is at N - 3.
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count >= 20, let state = fields[0].first,
              let ticks = Int64(String(decoding: fields[19], as: UTF8.self)) else { return nil }
        return Stat(state: state, startTicks: ticks)
    }

    /// This process's start tick (for the record it publishes).
    static func ownStartTicks() -> Int64? { procStat(getpid())?.startTicks }

    /// The effective uid in `/proc/PID/status` (`Uid:` real, effective, saved, filesystem).
    static func effectiveUID(_ pid: Int32) -> uid_t? {
        guard let bytes = read("/proc/\(pid)/status") else { return nil }
        let line = bytes.split(separator: UInt8(ascii: "\n")).first { $0.starts(with: Array("Uid:".utf8)) }
        let fields = line.map { $0.dropFirst(4).split(whereSeparator: { $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: " ") }) } ?? []
        guard fields.count >= 2 else { return nil }
        return uid_t(String(decoding: fields[1], as: UTF8.self))
    }

    /// The device and inode of the file the process runs (the kernel's link follows the file
    /// through a rename or a deletion); nil when it cannot be read (another user's process,
    /// for a caller who is not root).
    static func executable(_ pid: Int32) -> (device: UInt64, inode: UInt64)? {
        var info = Glibc.stat()
        guard stat("/proc/\(pid)/exe", &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// Where the process's executable is (the kernel's text, " (deleted)" included).
    static func executablePath(_ pid: Int32) -> String? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(PATH_MAX) + 1) { buffer in
            let count = readlink("/proc/\(pid)/exe", buffer.baseAddress!, buffer.count - 1)
            guard count > 0 else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[0..<count]), as: UTF8.self)
        }
    }

    /// Unix seconds of a start tick: the boot time (`btime` in `/proc/stat`) plus the ticks.
    static func startTime(ticks: Int64) -> Int64? {
        guard let system = read("/proc/stat", limit: 1 << 20) else { return nil }
        let line = system.split(separator: UInt8(ascii: "\n")).first { $0.starts(with: Array("btime ".utf8)) }
        guard let boot = line.flatMap({ Int64(String(decoding: $0.dropFirst(6), as: UTF8.self)) }) else { return nil }
        let perSecond = Int64(sysconf(Int32(_SC_CLK_TCK)))
        return perSecond > 0 ? boot + ticks / perSecond : nil
    }

    /// A whole procfs file, or nil.
    private static func read(_ path: String, limit: Int = 64 << 10) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return try? FileSystem.readToEnd(fd, path: path, limit: limit)
    }
}
