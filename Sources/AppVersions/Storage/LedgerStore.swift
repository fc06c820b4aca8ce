/// Where ledgers live: an ordered, append-only list of entries per scope.
///
/// AppVersions ships two stores: ``FileLedgerStore`` (crash-safe files, the default
/// for apps) and ``InMemoryLedgerStore`` (for tests). A custom store (a table in the
/// app's own database, say) implements the two required methods and, if several
/// processes may share it, ``withExclusiveAccess(to:_:)``.
///
/// Contract:
/// - ``entries(in:)`` returns every entry appended to the scope, in order; an empty
///   array when nothing was ever written (a first start is not an error).
/// - ``append(_:to:)`` is atomic: after a crash, a reader sees all of the new entries
///   or none of them, and never a damaged ledger.
/// - Scopes are independent.
public protocol LedgerStore: Sendable {
    /// Every entry appended to `scope`, oldest first; empty if the scope has none.
    ///
    /// - Throws: an error if the ledger exists but cannot be read or is damaged
    ///   (the built-in stores throw ``AppVersionsError``).
    func entries(in scope: Scope) throws -> [LedgerEntry]

    /// Appends `entries` to `scope` in one atomic step.
    ///
    /// - Throws: an error if nothing could be written; then none of `entries` was stored.
    func append(_ entries: [LedgerEntry], to scope: Scope) throws

    /// Runs `body` while no other process or thread holds exclusive access to `scope`.
    ///
    /// ``VersionTracker`` and ``Migrator`` read, decide and append inside this, so two
    /// copies of the app starting at once do not run a step twice. The default
    /// implementation just runs `body`, which is right for a store used by one thread.
    /// Not re-entrant: do not use the same scope from inside `body`.
    func withExclusiveAccess<Result>(to scope: Scope, _ body: () throws -> Result) throws -> Result
}

extension LedgerStore {
    /// Runs `body` without any locking; suitable for stores used by a single thread.
    public func withExclusiveAccess<Result>(to scope: Scope, _ body: () throws -> Result) throws -> Result {
        try body()
    }
}

extension LedgerStore {
    /// Loads and folds a scope's ledger, wrapping foreign errors.
    func ledger(for scope: Scope, historyOnly: Bool = false) throws -> Ledger {
        do {
            return Ledger(try entries(in: scope), historyOnly: historyOnly)
        } catch {
            throw AppVersionsError.wrappingStoreError(error, scope: scope)
        }
    }

    /// Appends records, wrapping foreign errors.
    func append(records: [LedgerRecord], to scope: Scope) throws {
        do {
            try append(records.map(LedgerEntry.init), to: scope)
        } catch {
            throw AppVersionsError.wrappingStoreError(error, scope: scope)
        }
    }

    /// Exclusive access, wrapping foreign errors thrown by the lock itself.
    func exclusively<Result>(_ scope: Scope, _ body: () throws -> Result) throws -> Result {
        do {
            return try withExclusiveAccess(to: scope, body)
        } catch {
            throw AppVersionsError.wrappingStoreError(error, scope: scope)
        }
    }
}
