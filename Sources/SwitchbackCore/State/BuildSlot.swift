/// One of the two builds of AppCore in a bundle.
public enum BuildSlot: String, Sendable, CaseIterable, Codable {
    /// The current release, built from the working tree.
    case current
    /// The previous release, built from the commit PreviousVersion/ is pinned to.
    case previous

    /// The slot that is not this one.
    public var other: BuildSlot { self == .current ? .previous : .current }
}

/// Who set the rollback flag.
public enum ChoiceSource: String, Sendable, Codable {
    /// Nobody: no state file yet, the current slot runs.
    case `default`
    /// An operator, with rollbackctl.
    case cli
    /// A signed remote directive.
    case remote
    /// Automatic rollback after failed starts.
    case auto
}
