#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One change in the operating system the app ran on, within a scope.
public struct SystemEvent: Sendable, Equatable {
    /// When the change was recorded.
    public var date: Date
    /// The system seen from then on.
    public var system: SystemVersion

    /// Creates a system event; ``VersionTracker`` makes these for you.
    public init(date: Date, system: SystemVersion) {
        self.date = date
        self.system = system
    }
}
