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
/// ``main(_:)`` runs as a Swift 6 `@main` async entry point's `main` does: isolated to the main
/// actor, on the launcher's main thread, which runs the main actor's work until `main` returns
/// (`@MainActor` functions, `MainActor.run`, tasks the app starts on the main actor). Work still
/// queued on the main actor when `main` returns does not run: the process exits with `main`'s
/// code. A `main` declared `nonisolated` runs on the global concurrent executor instead; the
/// launcher's main thread still runs the main actor until it returns.
public protocol AsyncSwitchbackApp: SendableMetatype {
    /// See ``SwitchbackApp/migrations(_:launch:)``.
    static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws
    /// See ``SwitchbackApp/holdsDataLock(_:)``.
    static func holdsDataLock(_ launch: LaunchInfo) -> Bool
    /// Runs the app and returns its exit code, on the main actor (an implementation written in
    /// the conforming type takes this isolation, as `@main`'s `main` does). A thrown error is
    /// printed as `Error: ...` on stderr and exits 1.
    @MainActor static func main(_ launch: LaunchInfo) async throws -> Int32
}

extension SwitchbackApp {
    public static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {}
    public static func holdsDataLock(_ launch: LaunchInfo) -> Bool { false }
}

extension AsyncSwitchbackApp {
    public static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {}
    public static func holdsDataLock(_ launch: LaunchInfo) -> Bool { false }
}
