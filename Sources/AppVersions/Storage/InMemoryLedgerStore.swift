import Synchronization

/// A ledger store that keeps everything in memory, for tests and previews.
///
/// Thread-safe; appends are atomic by construction. Nothing survives the process.
///
/// ```swift
/// let store = InMemoryLedgerStore()
/// let tracker = VersionTracker(store: store, osReleasePath: nil)
/// ```
public final class InMemoryLedgerStore: LedgerStore {
    private let ledgers = Mutex<[Scope: [LedgerEntry]]>([:])

    /// Creates an empty store.
    public init() {}

    /// Every entry appended to `scope`, oldest first.
    public func entries(in scope: Scope) -> [LedgerEntry] {
        ledgers.withLock { $0[scope] ?? [] }
    }

    /// Appends `entries` to `scope`.
    public func append(_ entries: [LedgerEntry], to scope: Scope) {
        ledgers.withLock { $0[scope, default: []].append(contentsOf: entries) }
    }

    /// Forgets everything stored for `scope`.
    public func remove(_ scope: Scope) {
        _ = ledgers.withLock { $0.removeValue(forKey: scope) }
    }

    /// The scopes that have entries.
    public var scopes: [Scope] {
        ledgers.withLock { Array($0.keys) }
    }
}
