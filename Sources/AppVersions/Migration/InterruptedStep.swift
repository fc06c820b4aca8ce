#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A step that began but never ended: the process died while it ran.
public struct InterruptedStep: Sendable, Equatable {
    /// The step's name.
    public var name: String
    /// When it began.
    public var startedAt: Date
    /// The version that was running it.
    public var running: RunningVersion
}
