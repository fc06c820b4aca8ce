/// An app the launcher runs synchronously: a command-line program, or a loop of its own.
///
/// Register it with one line in the app's library (see ``Switchback/register(_:)-(SwitchbackApp.Type)``).
/// Before ``main(_:)`` runs, the SDK records the version in the app's history and runs the
/// migrations ``migrations(_:launch:)`` registers that are due.
public protocol SwitchbackApp: SendableMetatype {
    /// Registers the app's data migrations on `migrator`, whose store and data directory
    /// the SDK has set. The default registers none.
    static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws
    /// Whether this run holds the data lock (shared) from before its migrations until it
    /// exits, so that a rollback's downgrade waits for it. Return true for a command that
    /// writes the data and exits; a long-running server uses ``LaunchInfo/withDataLock(exclusive:_:)``
    /// around its writes instead. The default is false.
    static func holdsDataLock(_ launch: LaunchInfo) -> Bool
    /// Runs the app and returns its exit code. A thrown error is printed as `Error: ...`
    /// on stderr and exits 1.
    static func main(_ launch: LaunchInfo) throws -> Int32
}

/// An app the launcher runs on Swift concurrency: a Hummingbird or Vapor server's `main`
/// runs inside ``main(_:)`` unchanged.
///
/// The launcher's thread waits for ``main(_:)`` to return; the task runs on the global
/// concurrent executor. Code isolated to `@MainActor` does not run (nothing drains the
/// main queue): keep the app's work off the main actor, as servers do.
public protocol AsyncSwitchbackApp: SendableMetatype {
    /// See ``SwitchbackApp/migrations(_:launch:)``.
    static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws
    /// See ``SwitchbackApp/holdsDataLock(_:)``.
    static func holdsDataLock(_ launch: LaunchInfo) -> Bool
    /// Runs the app and returns its exit code. A thrown error is printed as `Error: ...`
    /// on stderr and exits 1.
    static func main(_ launch: LaunchInfo) async throws -> Int32
}

extension SwitchbackApp {
    public static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {}
    public static func holdsDataLock(_ launch: LaunchInfo) -> Bool { false }
}

extension AsyncSwitchbackApp {
    public static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {}
    public static func holdsDataLock(_ launch: LaunchInfo) -> Bool { false }
}
