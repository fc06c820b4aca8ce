import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a finished process left behind.
struct ProcessResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    /// True when it was killed by a signal (status then holds the signal number).
    var signaled: Bool

    var description: String { "exit \(status)\(signaled ? " (signal)" : "")\nstdout: \(stdout)\nstderr: \(stderr)" }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs a process to completion (killing it after a generous deadline) and captures both
/// output streams.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                deadline: TimeInterval = 120) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    // Wait on a semaphore, not waitUntilExit(): that spins a run loop at 100% CPU, and on a
    // 2-core machine two such waits starve the processes under test and every other test.
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    try process.run()
    // Read both pipes concurrently so a chatty process never blocks on a full pipe.
    let group = DispatchGroup()
    nonisolated(unsafe) var outData = Data(), errData = Data()
    DispatchQueue.global().async(group: group) { outData = out.fileHandleForReading.readDataToEndOfFile() }
    DispatchQueue.global().async(group: group) { errData = err.fileHandleForReading.readDataToEndOfFile() }
    let timer = DispatchSource.makeTimerSource()
    timer.schedule(deadline: .now() + deadline)
    timer.setEventHandler { kill(process.processIdentifier, SIGKILL) }
    timer.resume()
    exited.wait()
    timer.cancel()
    group.wait()
    return ProcessResult(status: process.terminationStatus,
                         stdout: String(decoding: outData, as: UTF8.self),
                         stderr: String(decoding: errData, as: UTF8.self),
                         signaled: process.terminationReason == .uncaughtSignal)
}

/// Runs a command and throws unless it exits 0.
@discardableResult
func shell(_ arguments: String...) throws -> ProcessResult {
    let result = try runProcess("/usr/bin/env", arguments)
    guard result.status == 0 else { throw TestFailure("\(arguments.joined(separator: " ")) failed: \(result)") }
    return result
}

/// A new private temporary directory (mode 0700).
func makeTemporaryDirectory() throws -> String {
    let base = URL(fileURLWithPath: NSTemporaryDirectory()).resolvingSymlinksInPath().path
    var template = Array((base + "/switchback-test-XXXXXX").utf8CString)
    guard let pointer = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
    return String(cString: pointer)
}

/// Compiles a C source into a shared library with the system's cc.
func compileSharedLibrary(_ source: String, to path: String) throws {
    let file = path + ".c"
    try source.write(toFile: file, atomically: true, encoding: .utf8)
    try shell("cc", "-shared", "-fPIC", "-o", path, file)
}

extension Process {
    /// Starts the process and returns a function that waits for it to exit on a semaphore:
    /// `waitUntilExit()` spins a run loop at 100% CPU, which starves a 2-core machine.
    func start() throws -> () -> Void {
        let exited = DispatchSemaphore(value: 0)
        terminationHandler = { _ in exited.signal() }
        try run()
        return { exited.wait() }
    }
}
