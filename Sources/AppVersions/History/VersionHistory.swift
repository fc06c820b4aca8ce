/// A scope's recorded version history: every transition, oldest first.
///
/// ```swift
/// let history = try VersionTracker(store: store).history()
/// print("first installed \(history.firstInstalled!) on \(history.events.first!.date)")
/// ```
public struct VersionHistory: Sendable, Equatable {
    /// Every app version transition, oldest first: installed, upgraded, downgraded, updated.
    public var events: [HistoryEvent]
    /// Every operating system change, oldest first; the first is the system at the first launch.
    public var systemEvents: [SystemEvent]

    /// Creates a history from its events.
    public init(events: [HistoryEvent] = [], systemEvents: [SystemEvent] = []) {
        self.events = events
        self.systemEvents = systemEvents
    }

    /// The version recorded first in this scope, or nil if nothing was recorded.
    public var firstInstalled: RunningVersion? { events.first?.running }

    /// The most recently recorded version.
    public var latest: RunningVersion? { events.last?.running }

    /// The version recorded before ``latest``, or nil if there was none.
    public var previous: RunningVersion? {
        events.count >= 2 ? events[events.count - 2].running : nil
    }

    /// The most recently recorded operating system.
    public var latestSystem: SystemVersion? { systemEvents.last?.system }

    /// Whether nothing has been recorded yet.
    public var isEmpty: Bool { events.isEmpty }
}
