#if canImport(Glibc)
import Glibc
#endif
import SwitchbackCore

/// `history`: every switch and fallback, oldest first.
struct HistoryCommand {
    let workspace: Workspace
    let json: Bool

    func run(_ console: Console) throws(CommandError) {
        try workspace.checkTrusted()
        let (events, unreadable): ([SwitchHistoryEvent], Int)
        do { (events, unreadable) = try workspace.history.read() } catch { throw .failure(error.message) }
        if json {
            console.out(JSON.render(events.map { event -> [String: Any] in
                ["time": formatRFC3339(event.time), "kind": event.kind.rawValue, "from": event.from.rawValue,
                 "to": event.to.rawValue, "source": event.source.rawValue, "reason": event.reason ?? JSON.null]
            }))
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
