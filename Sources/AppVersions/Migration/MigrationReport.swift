/// What one ``Migrator/run(for:scope:)`` did.
public struct MigrationReport: Sendable, Equatable {
    /// The scope that was migrated.
    public var scope: Scope
    /// The version and build migrated to.
    public var running: RunningVersion
    /// The last version whose migrations had completed before this run, if any.
    public var previous: RunningVersion?
    /// Whether this run was the scope's first install.
    public var isFirstInstall: Bool
    /// The baseline adopted by this run, for a legacy install.
    public var baseline: Version?
    /// The steps that completed in this run, in the order they ran.
    public var ran: [String]
    /// The steps that failed in this run under the ``MigrationStep/ErrorPolicy/continue`` policy.
    public var failed: [FailedStep]
    /// Steps a previous run left unfinished because the process died; each runs again
    /// in its turn with ``MigrationContext/isRetryAfterInterruption`` set.
    public var interrupted: [InterruptedStep]
    /// Reverts and restores a previous ``Migrator/downgrade(to:force:scope:)`` left
    /// unfinished because the process died, finished by this run before anything else.
    public var recoveredUndos: [DowngradeAction] = []
}
