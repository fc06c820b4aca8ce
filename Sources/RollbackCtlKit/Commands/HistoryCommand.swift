#if canImport(Glibc)
import Glibc
#endif
import SwitchbackCore

/// `history`: every switch and fallback, oldest first.
struct HistoryCommand: ReportCommand {
    static let configuration = CommandConfiguration(
        name: "history",
        abstract: "Every switch and data conversion: when, from, to, source, reason.",
        overview: """
            Show every switch and fallback, and every revert, restore and archive of
            the data before a rollback: when, from, to, source, reason.
            """,
        options: [.init("--json", help: "Print JSON (an array of events, oldest first).")])

    let workspace: Workspace
    let json: Bool

    func run(_ console: Console) throws(CommandError) {
        try workspace.checkTrusted()
        let (events, unreadable): ([SwitchHistoryEvent], Int)
        do { (events, unreadable) = try workspace.history.read() } catch { throw .failure(error.message) }
        if json {
            console.out(JSONWriter.render(events.map(HistoryEntry.init)))
        } else if events.isEmpty {
            console.out("No switches yet.")
        } else {
            for event in events {
                let reason = event.reason.map { "  \($0)" } ?? ""
                console.out("\(formatUTC(event.time))  \(event.kind.rawValue)  \(event.from.rawValue) -> \(event.to.rawValue)  \(event.source.rawValue)\(reason)")
            }
        }
        if unreadable > 0 {
            console.error("Warning: \(unreadable) line(s) of \(workspace.history.path) could not be read and were skipped.")
        }
    }
}
