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

/// A child started with posix_spawn and reaped with waitpid, for long-running processes
/// that tests signal: no Foundation machinery between the test and the child.
final class SpawnedProcess {
    let pid: pid_t
    private(set) var status: Int32?

    /// Starts `executable` with `arguments` and exactly `environment`, stdin from /dev/null,
    /// stdout and stderr appended to the given files (or /dev/null).
    /// With `ownProcessGroup`, the child leads a new process group (its pid), so that
    /// `kill(-pid, ...)` reaches everything it started.
    init(_ executable: String, _ arguments: [String], environment: [String: String],
         stdout: String = "/dev/null", stderr: String = "/dev/null", ownProcessGroup: Bool = false) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        if ownProcessGroup { posix_spawnattr_setpgroup(&attributes, 0) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | (ownProcessGroup ? POSIX_SPAWN_SETPGROUP : 0)))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw TestFailure("posix_spawn \(executable) failed: \(result)") }
        self.pid = pid
    }

    /// True once the child has exited (and was reaped).
    var hasExited: Bool {
        if status != nil { return true }
        var raw: Int32 = 0
        if waitpid(pid, &raw, WNOHANG) == pid { status = raw }
        return status != nil
    }

    /// Waits for the child to exit; kills it with SIGKILL after `seconds`.
    @discardableResult
    func wait(upTo seconds: Double = 120) -> Int32 {
        let deadline = Date().addingTimeInterval(seconds)
        var killed = false
        while !hasExited {
            if !killed && Date() > deadline {
                kill(pid, SIGKILL)
                killed = true
            }
            usleep(5_000)
        }
        return status!
    }

    /// The exit code, or nil when a signal ended it.
    var exitCode: Int32? {
        guard let status, status & 0x7F == 0 else { return nil }
        return (status >> 8) & 0xFF
    }

    /// The signal that ended it, if one did.
    var terminationSignal: Int32? {
        guard let status, status & 0x7F != 0, status & 0x7F != 0x7F else { return nil }
        return status & 0x7F
    }

    deinit {
        if !hasExited { kill(pid, SIGKILL); wait() }
    }
}
