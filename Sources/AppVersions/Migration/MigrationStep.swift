/// One named piece of migration work and when it runs.
///
/// Most code registers steps through ``Migrator/register(_:at:onError:_:)`` and its
/// siblings; build a `MigrationStep` yourself to keep steps in a list or share them
/// between migrators. New optional properties may be added later with defaults, so
/// code that creates steps today keeps compiling.
public struct MigrationStep {
    /// When a step runs.
    public enum Trigger: Sendable, Hashable {
        /// Once per scope, when the scope's data moves to this version or past it from
        /// a version below it; never on a first install at or above it.
        case version(Version)
        /// Once per scope, on its first install only, before anything else.
        case firstInstall
        /// On every launch whose version or build differs from the last one migrated
        /// in the scope, after the version steps; not on a first install.
        case everyVersionChange
    }

    /// What happens when a step throws.
    public enum ErrorPolicy: Sendable, Hashable {
        /// Stop the run and throw ``AppVersionsError/Code/stepFailed``. The step is not
        /// recorded as done, so it runs again on the next start; later steps wait.
        case stop
        /// Record the step as failed and go on with the next step; it is not retried.
        case `continue`
    }

    /// The step's unique name; the ledger records steps by name.
    public var name: String
    /// When the step runs.
    public var trigger: Trigger
    /// What happens when the step throws.
    public var errorPolicy: ErrorPolicy
    /// The work. It runs on the thread that called ``Migrator/run(for:scope:)``.
    public var body: (MigrationContext) throws -> Void
    /// The oldest version that can still read the scope's data after this step; nil
    /// means the step's own version (the conservative default: no older release can).
    /// Only meaningful for ``Trigger/version(_:)`` steps.
    public var readerFloor: Version?
    /// Undoes the step's change to the data, for ``Migrator/downgrade(to:force:scope:)``.
    /// It must be repeatable, like a step: a revert interrupted by a crash runs again.
    public var revert: ((MigrationContext) throws -> Void)?

    /// Creates a step.
    ///
    /// - Parameters:
    ///   - name: A unique, stable name; renaming a step makes it run again.
    ///   - trigger: When the step runs.
    ///   - readerFloor: The oldest version that can read the data after the step; nil
    ///     (the default) means the step's own version.
    ///   - revert: Undoes the step for a downgrade; must be safe to repeat.
    ///   - errorPolicy: What happens when `body` throws; ``ErrorPolicy/stop`` by default.
    ///   - body: The work.
    public init(
        _ name: String,
        trigger: Trigger,
        readerFloor: Version? = nil,
        revert: ((MigrationContext) throws -> Void)? = nil,
        onError errorPolicy: ErrorPolicy = .stop,
        _ body: @escaping (MigrationContext) throws -> Void
    ) {
        self.readerFloor = readerFloor
        self.revert = revert
        self.name = name
        self.trigger = trigger
        self.errorPolicy = errorPolicy
        self.body = body
    }

    /// The step's version, for ``Trigger/version(_:)`` steps.
    var version: Version? {
        if case .version(let version) = trigger { return version }
        return nil
    }
}
