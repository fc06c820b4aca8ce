#if canImport(Glibc)
import Glibc
#endif

/// The append-only, bounded switch history (`history.log` in the state directory).
///
/// Each event is one line written with one `write(2)` and fsynced; a torn last line left by
/// a crash is skipped by readers. When the log passes `limit` events the oldest are dropped
/// in one atomic rewrite (down to 90% of the limit, so rewrites are rare); the same happens
/// past `byteLimit` bytes, so the file stays small whatever reasons it holds. A file grown
/// past that by other hands is read from its tail only. Callers hold the state directory's
/// lock while appending.
public struct HistoryLog: Sendable {
    /// The most events kept.
    public static let limit = 1000
    /// The most bytes kept (reasons are cut at `Limits.storedReasonBytes`, so 1000 events of
    /// the longest reasons would not fit: the byte bound wins then).
    public static let byteLimit = 1 << 20

    public let path: String

    public init(path: String) { self.path = path }

    /// Reads every event, oldest first, and how many lines could not be read.
    public func read() throws(SwitchbackError) -> (events: [SwitchHistoryEvent], unreadableLines: Int) {
        guard let bytes = try readTail(Self.byteLimit) else { return ([], 0) }
        return Self.parse(bytes)
    }

    /// Parses the log's bytes: every event, oldest first, and how many lines could not be
    /// read (torn, foreign, or with a time outside `ValueRange.unixTime`).
    public static func parse(_ bytes: [UInt8]) -> (events: [SwitchHistoryEvent], unreadableLines: Int) {
        var events: [SwitchHistoryEvent] = []
        var unreadable = 0
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            if let event = SwitchHistoryEvent(line: line) { events.append(event) } else { unreadable += 1 }
        }
        return (events, unreadable)
    }

    /// Appends an event durably; compacts when the log is past the limit. Then tells
    /// monitoring (`Observer`: a journald entry, the metrics file), which never fails it.
    public func append(_ event: SwitchHistoryEvent) throws(SwitchbackError) {
        try FileSystem.appendDurably(path, Array(event.serialized().utf8))
        defer { Observer.historyAppended(event, historyPath: path) }
        // Lines are at least 30 bytes: only count them when the file could be past the limit.
        guard let info = try FileSystem.status(path), Int(info.st_size) > Self.limit * 30 else { return }
        let tooLarge = Int(info.st_size) > Self.byteLimit
        let events = try read().events
        guard events.count > Self.limit || tooLarge else { return }
        var kept = Array(events.suffix(Self.limit * 9 / 10))
        var bytes = kept.reduce(0) { $0 + $1.serialized().utf8.count }
        while bytes > Self.byteLimit * 9 / 10, !kept.isEmpty { bytes -= kept.removeFirst().serialized().utf8.count }
        try FileSystem.replace(path, with: Array(kept.map { $0.serialized() }.joined().utf8))
    }

    /// The file's last `count` bytes (all of it when smaller), starting at a line: a file
    /// grown past the limit by other hands costs one bounded read, never an error.
    private func readTail(_ count: Int) throws(SwitchbackError) -> [UInt8]? {
        guard let info = try FileSystem.status(path) else { return nil }
        let size = Int(info.st_size)
        if size <= count { return try FileSystem.read(path, limit: count) }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 { throw .system("Opening", path: path, errno: errno) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: count)
        let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(size - count)) }
        if got < 0 { throw .system("Reading", path: path, errno: errno) }
        let tail = buffer.prefix(got)
        guard let newline = tail.firstIndex(of: 0x0A) else { return [] }
        return Array(tail[(newline + 1)...])
    }
}
