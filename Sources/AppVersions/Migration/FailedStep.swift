#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A step that threw.
public struct FailedStep: Sendable, Equatable {
    /// The step's name.
    public var name: String
    /// The description of the error it threw.
    public var message: String
    /// When it failed.
    public var date: Date
    /// Whether it will run again (the ``MigrationStep/ErrorPolicy/stop`` policy) or
    /// stays failed (``MigrationStep/ErrorPolicy/continue``).
    public var isRetried: Bool
}
