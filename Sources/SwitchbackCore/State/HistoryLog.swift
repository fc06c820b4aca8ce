/// The append-only, bounded switch history (`history.log` in the state directory).
///
/// Each event is one line written with one `write(2)` and fsynced; a torn last line left by
/// a crash is skipped by readers. When the log passes `limit` events the oldest are dropped
/// in one atomic rewrite (down to 90% of the limit, so rewrites are rare). Callers hold the state directory's lock while appending.
public struct HistoryLog: Sendable {
    /// The most events kept.
    public static let limit = 1000

    public let path: String

    public init(path: String) { self.path = path }

    /// Reads every event, oldest first, and how many lines could not be read.
    public func read() throws(SwitchbackError) -> (events: [HistoryEvent], unreadableLines: Int) {
        guard let bytes = try FileSystem.read(path) else { return ([], 0) }
        return Self.parse(bytes)
    }

    /// Parses the log's bytes: every event, oldest first, and how many lines could not be
    /// read (torn, foreign, or with a time outside `ValueRange.unixTime`).
    public static func parse(_ bytes: [UInt8]) -> (events: [HistoryEvent], unreadableLines: Int) {
        var events: [HistoryEvent] = []
        var unreadable = 0
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            if let event = HistoryEvent(line: line) { events.append(event) } else { unreadable += 1 }
        }
        return (events, unreadable)
    }

    /// Appends an event durably; compacts when the log is past the limit.
    public func append(_ event: HistoryEvent) throws(SwitchbackError) {
        try FileSystem.appendDurably(path, Array(event.serialized().utf8))
        // Lines are at least 30 bytes: only count them when the file could be past the limit.
        guard let info = try FileSystem.status(path), Int(info.st_size) > Self.limit * 30 else { return }
        let events = try read().events
        guard events.count > Self.limit else { return }
        let kept = events.suffix(Self.limit * 9 / 10).map { $0.serialized() }.joined()
        try FileSystem.replace(path, with: Array(kept.utf8))
    }
}
