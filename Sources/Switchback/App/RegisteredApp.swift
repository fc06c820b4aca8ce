import CSwitchbackSDKSupport
import Synchronization

/// The registered app, as closures: what the entry points call.
struct RegisteredApp: Sendable {
    let migrations: @Sendable (inout Migrator, LaunchInfo) throws -> Void
    let holdsDataLock: @Sendable (LaunchInfo) -> Bool
    let run: @Sendable (LaunchInfo) -> Int32

    init<App: SwitchbackApp>(_ app: App.Type) {
        migrations = { try App.migrations(&$0, launch: $1) }
        holdsDataLock = { App.holdsDataLock($0) }
        run = { launch in
            do { return try App.main(launch) } catch { return Self.failed(error) }
        }
    }

    init<App: AsyncSwitchbackApp>(_ app: App.Type) {
        migrations = { try App.migrations(&$0, launch: $1) }
        holdsDataLock = { App.holdsDataLock($0) }
        run = { launch in
            MainActorRunLoop.run {
                do { return try await App.main(launch) } catch { return Self.failed(error) }
            }
        }
    }

    static func failed(_ error: any Error) -> Int32 {
        SDKFiles.printError("Error: \(error)")
        return 1
    }

    /// The registered app: the one `Switchback.register` recorded, else the one the
    /// library's `switchback_register` registers when asked now; nil when it has none.
    static var current: RegisteredApp? {
        if let app = registry.withLock({ $0 }) { return app }
        _ = switchback_sdk_call_register()
        return registry.withLock { $0 }
    }

    static func register(_ app: RegisteredApp) {
        registry.withLock { $0 = app }
    }

    private static let registry = Mutex<RegisteredApp?>(nil)
}

extension RegisteredApp {
    /// Forgets the registered app (tests only: the next run asks the library again).
    static func reset() { registry.withLock { $0 = nil } }
}
