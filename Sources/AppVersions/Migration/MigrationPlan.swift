/// What ``Migrator/run(for:scope:)`` would do now, worked out without running anything.
public struct MigrationPlan: Sendable, Equatable {
    /// The scope planned for.
    public var scope: Scope
    /// The version and build planned for.
    public var running: RunningVersion
    /// The last version whose migrations completed in the scope, if any.
    public var previous: RunningVersion?
    /// Whether the scope has no migration record and no baseline: first-install steps run, nothing else.
    public var isFirstInstall: Bool
    /// The baseline the run would adopt, for a legacy install with no record yet.
    public var baseline: Version?
    /// The names of the steps that would run, in order.
    public var steps: [String]
    /// Steps the last run left unfinished because the process died.
    public var interrupted: [InterruptedStep]

    /// Whether the scope is already migrated to `running`: nothing to run, nothing to record.
    public var isUpToDate: Bool
}
