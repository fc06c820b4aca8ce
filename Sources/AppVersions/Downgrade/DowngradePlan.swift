/// What ``Migrator/downgrade(to:force:scope:)`` would undo, worked out without changing anything.
public struct DowngradePlan: Sendable, Equatable {
    /// How one applied step would be undone.
    public enum Action: Sendable, Equatable {
        /// Its ``MigrationStep/revert`` runs.
        case revert
        /// The snapshot taken before it, at this path, replaces the data directory;
        /// the current data set is moved to an archive, never deleted.
        case restoreSnapshot(String)
        /// It ran after the step named here, whose snapshot restore undoes it too.
        case undoneByRestore(of: String)
        /// It has no revert and no snapshot: undoing it is refused unless `force`,
        /// which archives the data directory and leaves it empty.
        case impossible
    }

    /// One applied step that must be undone.
    public struct Step: Sendable, Equatable {
        /// The step's name.
        public var name: String
        /// The step's version.
        public var version: Version
        /// The oldest version that can read the data after it.
        public var readerFloor: Version
        /// How it would be undone.
        public var action: Action
    }

    /// The scope planned for.
    public var scope: Scope
    /// The version to go back to.
    public var target: Version
    /// The oldest version that can read the scope's data now, or nil if no step applies.
    public var readerFloor: Version?
    /// The steps to undo, newest first.
    public var steps: [Step]

    /// Whether `target` can read the data as it is: nothing needs undoing.
    public var isSafe: Bool { steps.isEmpty }
    /// Whether every step can be undone without `force`.
    public var isPossible: Bool { !steps.contains { $0.action == .impossible } }
}

/// How a downgrade undid a step.
public enum UndoMethod: String, Sendable, Hashable {
    /// The step's ``MigrationStep/revert`` ran.
    case revert
    /// A snapshot taken before the step (or before an older step) replaced the data.
    case restore
    /// Nothing could undo it; under `force` the data directory was archived and emptied.
    case archive
}

/// One step a downgrade undid.
public struct DowngradeAction: Sendable, Equatable {
    /// The step's name.
    public var name: String
    /// How it was undone.
    public var method: UndoMethod
    /// Where the data set that was replaced now lives, for a restore or an archive.
    public var archive: String?
    /// Whether this finished an undo that an earlier, interrupted process had begun.
    public var isRecovery: Bool
}

/// What ``Migrator/downgrade(to:force:scope:)`` did.
public struct DowngradeReport: Sendable, Equatable {
    /// The scope downgraded.
    public var scope: Scope
    /// The version gone back to.
    public var target: Version
    /// The data's reader floor before the downgrade.
    public var readerFloorBefore: Version?
    /// The data's reader floor after it.
    public var readerFloorAfter: Version?
    /// Undos that an earlier, interrupted downgrade had begun, finished first.
    public var recovered: [DowngradeAction]
    /// What this downgrade undid, newest step first.
    public var actions: [DowngradeAction]
}
