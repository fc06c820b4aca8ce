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
    /// The steps that would run, in order (the same as ``steps``), each with the oldest
    /// version that can read the data once it has run.
    public var pending: [Step] = []

    /// A step ``Migrator/run(for:scope:)`` would run.
    public struct Step: Sendable, Equatable {
        /// The step's name.
        public var name: String
        /// When it runs: a version step, a first-install step or an every-version-change hook.
        public var trigger: MigrationStep.Trigger
        /// The oldest version that can read the scope's data after the step:
        /// - a version step: its ``MigrationStep/readerFloor``, else its own version;
        /// - a first-install step: the highest floor (or version) of the registered version
        ///   steps at or below the running version, which the install counts as applied, else
        ///   the running version;
        /// - an every-version-change hook: nil. A hook never moves the floor: AppVersions
        ///   never undoes one, so a hook must leave data that every release reads, as the
        ///   older release runs it again after a rollback.
        public var readerFloor: Version?

        /// Creates a planned step (an app's tests compare plans with these).
        public init(name: String, trigger: MigrationStep.Trigger, readerFloor: Version?) {
            self.name = name
            self.trigger = trigger
            self.readerFloor = readerFloor
        }
    }
}
