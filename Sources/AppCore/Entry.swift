import AppCoreStamp
import SwitchbackContract

// The two symbols every AppCore exports. Keep them when you replace the sample app.

/// The ABI stamp of this build: the contract version and the compiler that built it.
@_cdecl("switchback_abi_stamp")
public func switchbackABIStamp() -> UnsafePointer<CChar> {
    switchback_compiled_abi_stamp()
}

/// The entry point the launcher calls, with its argv and environment untouched.
@_cdecl("switchback_main")
public func switchbackMain(
    _ argc: Int32,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ envp: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ context: UnsafePointer<SwitchbackContext>?
) -> Int32 {
    var arguments: [String] = []
    for index in 1..<Int(max(argc, 1)) {
        arguments.append(argv?[index].map { String(cString: $0) } ?? "")
    }
    return SampleApp(launch: LaunchInfo(context)).run(arguments)
}
