import SwitchbackCore

/// One line of `rollbackctl history --json` (an array of these, oldest first): written with
/// `JSONWriter`, decoded by tests with `JSONDecoder`. Keys are an operator-facing format.
package struct HistoryEntry: Codable, Equatable, Sendable {
    /// RFC 3339.
    package var time: String
    /// "switch", "fallback", "release", "revert", "restore", "archive", ...
    package var kind: String
    package var from: String
    package var to: String
    package var source: String
    package var reason: String?
}

extension HistoryEntry {
    /// The event as the history's JSON shows it.
    init(_ event: SwitchHistoryEvent) {
        time = formatRFC3339(event.time)
        kind = event.kind.rawValue
        from = event.from.rawValue
        to = event.to.rawValue
        source = event.source.rawValue
        reason = event.reason
    }
}
