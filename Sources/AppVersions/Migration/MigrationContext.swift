/// What a running step knows about its run.
public struct MigrationContext: Sendable {
    /// The name of the step being run.
    public var step: String
    /// The scope being migrated, such as ``Scope/app`` or one user's scope.
    public var scope: Scope
    /// The version and build running now.
    public var running: RunningVersion
    /// The last version whose migrations completed in this scope (the baseline, for a
    /// legacy install); nil on a first install.
    public var previous: RunningVersion?
    /// Whether this run is the scope's first install.
    public var isFirstInstall: Bool
    /// Whether this step was interrupted (the process died while it ran) and is now
    /// being run again: check for and clean up half-done work.
    public var isRetryAfterInterruption: Bool
}
