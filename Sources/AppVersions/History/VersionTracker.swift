#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Records which versions of the app ran in a scope, and when.
///
/// Call ``record(_:slot:)`` once per launch, early. It appends an event only when the
/// version or build differs from the last one recorded (or on the first launch), so the
/// history is an append-only log of transitions, and it records the operating system
/// version from `/etc/os-release` in its own history.
///
/// ```swift
/// let tracker = VersionTracker(store: FileLedgerStore(directory: dir))
/// let launch = try tracker.record(RunningVersion(version: "2.0.0", build: "9f3c2ab"), slot: "current")
/// switch launch.changeState {
/// case .installed: showIntro()
/// case .upgraded(let from): showWhatsNew(since: from.version)
/// default: break
/// }
/// ```
///
/// No singleton: make a tracker wherever you need one; it holds no state of its own.
public struct VersionTracker: Sendable {
    /// Where the history is kept.
    public let store: any LedgerStore
    /// Which ledger the history belongs to.
    public let scope: Scope
    /// The os-release file to read, or nil to not record the operating system.
    public let osReleasePath: String?
    private let now: @Sendable () -> Date

    /// Creates a tracker.
    ///
    /// - Parameters:
    ///   - store: Where the history is kept.
    ///   - scope: Which ledger to use; ``Scope/app`` unless each user has their own data.
    ///   - osReleasePath: The os-release file to read; nil records no OS version (tests).
    ///   - now: The clock; tests pass a fixed date.
    public init(
        store: any LedgerStore,
        scope: Scope = .app,
        osReleasePath: String? = SystemVersion.defaultOSReleasePath,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.scope = scope
        self.osReleasePath = osReleasePath
        self.now = now
    }

    /// Records this launch and says how it differs from the previous one.
    ///
    /// Appends a ``HistoryEvent`` if this is the first launch in the scope or the
    /// version or build changed, and a ``SystemEvent`` if the OS changed; both in one
    /// atomic append. A launch that changes nothing writes nothing.
    ///
    /// - Parameters:
    ///   - running: The version and build running now.
    ///   - slot: The slot that runs, such as `"current"` or `"previous"`, if known.
    /// - Throws: ``AppVersionsError`` if the ledger cannot be read or written.
    @discardableResult
    public func record(_ running: RunningVersion, slot: String? = nil) throws -> Launch {
        let system = osReleasePath.flatMap { SystemVersion.read(osReleasePath: $0) }
        return try store.exclusively(scope) {
            var ledger = try store.ledger(for: scope, historyOnly: true)
            let change = ChangeState.between(ledger.latestRunning, and: running)
            let date = now()
            var records: [LedgerRecord] = []
            if let system, ledger.systemEvents.last?.system != system {
                records.append(.system(SystemEvent(date: date, system: system)))
            }
            if let kind = change.eventKind {
                let event = HistoryEvent(kind: kind, running: running, date: date, slot: slot, system: system)
                records.append(.history(event))
            }
            if !records.isEmpty {
                try store.append(records: records, to: scope)
                for record in records { ledger.apply(record) }
            }
            return Launch(
                running: running,
                slot: slot,
                changeState: change,
                history: VersionHistory(events: ledger.events, systemEvents: ledger.systemEvents)
            )
        }
    }

    /// The history recorded so far, without recording anything.
    ///
    /// - Throws: ``AppVersionsError`` if the ledger cannot be read.
    public func history() throws -> VersionHistory {
        let ledger = try store.ledger(for: scope, historyOnly: true)
        return VersionHistory(events: ledger.events, systemEvents: ledger.systemEvents)
    }
}
