/// A migration step a build would run at its start (from the planning run, part "plan").
public struct PendingStep: Sendable, Equatable {
    /// The step's name ("notes-v2").
    public var name: String
    /// The step's version ("1.2.0"); "" for a first-install step.
    public var version: String
    /// The oldest version that reads the data after it (the step's own version when it declared none).
    public var readerFloor: String

    public init(name: String, version: String, readerFloor: String) {
        self.name = name
        self.version = version
        self.readerFloor = readerFloor
    }
}
