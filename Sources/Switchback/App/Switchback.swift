@_exported import AppVersions

/// The Switchback SDK: what an app's dynamic library adds to run under the launcher.
///
/// The whole glue, in the app's library:
///
/// ```swift
/// import Switchback
///
/// @_cdecl("switchback_register") public func switchbackRegister() { Switchback.register(MyServer.self) }
/// ```
///
/// The SDK exports the rest of the contract (`switchback_main`, `switchback_downgrade`, the
/// ABI stamp, version and build) from the same library. See docs/adopting.md.
public enum Switchback {
    /// Registers the app the launcher runs. Call it from `switchback_register`, once.
    public static func register<App: SwitchbackApp>(_ app: App.Type) {
        RegisteredApp.register(RegisteredApp(app))
    }

    /// Registers an app whose `main` is `async`.
    public static func register<App: AsyncSwitchbackApp>(_ app: App.Type) {
        RegisteredApp.register(RegisteredApp(app))
    }

    /// Runs the registered app without the launcher, as an executable's `main.swift` does
    /// (`exit(Switchback.main())`): for `swift run` during development and as the baseline
    /// the launcher is measured against. ``LaunchInfo/slot`` is nil, the state directory
    /// is nil, and the data lives in ``LaunchInfo/dataDirectory``'s fallback.
    public static func main() -> Int32 {
        Runner.run(arguments: Array(CommandLine.arguments.dropFirst()), context: nil)
    }
}
