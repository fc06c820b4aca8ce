import Foundation

/// `python3 ARGUMENTS`, not yet run, as the tests' HTTP servers start: standard output piped
/// (the server prints its port there), standard error and input discarded.
public func pythonServerProcess(_ arguments: [String]) -> (process: Process, output: Pipe) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3"] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    return (process, output)
}
