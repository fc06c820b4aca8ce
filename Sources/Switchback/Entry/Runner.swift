import CSwitchbackContract

/// One run of the registered app: arguments and context in, exit code out.
enum Runner {
    /// `dataDirectory` replaces the convention's answer (the SDK's tests, which must not set
    /// the process's environment under other tests' feet).
    static func run(arguments: [String], context: UnsafePointer<SwitchbackContext>?, dataDirectory: String? = nil) -> Int32 {
        var launch = LaunchInfo(arguments: arguments, context: context)
        if let dataDirectory { launch.dataDirectory = dataDirectory }
        guard let app = RegisteredApp.current else {
            SDKFiles.printError(missingRegistration)
            return 70
        }
        // Held until the process exits: a downgrade waits for this run to finish.
        let lock = app.holdsDataLock(launch)
            ? DataLock(dataDirectory: launch.dataDirectory, exclusive: false, waitSeconds: nil) : nil
        defer { withExtendedLifetime(lock) {} }
        do {
            (launch.versionChange, launch.migrationReport) = try DataStartup(launch: launch, app: app).run()
        } catch {
            SDKFiles.printError("Error: the app (version \(launch.version)) could not prepare its data in \(launch.dataDirectory): \(error)")
            return 1
        }
        return app.run(launch)
    }

    static let missingRegistration = "Error: this library registers no app; add to it: @_cdecl(\"switchback_register\") public func switchbackRegister() { Switchback.register(YourApp.self) }"
}

/// The entry point the launcher calls (contract: switchback.h), with its argv untouched.
@_cdecl("switchback_main")
public func _switchbackMain(
    _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ envp: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ context: UnsafePointer<SwitchbackContext>?
) -> Int32 {
    var arguments: [String] = []
    for index in 1..<Int(max(argc, 1)) {
        arguments.append(argv?[index].map { String(cString: $0) } ?? "")
    }
    return Runner.run(arguments: arguments, context: context)
}
