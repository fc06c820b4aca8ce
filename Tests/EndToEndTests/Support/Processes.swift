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

/// Starts `executable` with posix_spawn: stdin from /dev/null, `redirect` adding the other
/// file actions, every signal unblocked and at its default, optionally leading a new
/// process group. The test process's own signal mask and handlers never leak in.
func spawn(_ executable: String, _ arguments: [String], environment: [String: String], ownProcessGroup: Bool = false,
           keepingDescriptorsBelow keep: Int32 = 3, redirect: (inout posix_spawn_file_actions_t) -> Void) -> Result<pid_t, TestFailure> {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    redirect(&actions)
    // Nothing but 0, 1 and 2 reaches the child: a descriptor the test process did not open
    // close-on-exec (swift test's own output pipe among them) would otherwise outlive the
    // test in whatever the child leaves behind (a crashed app's swift-backtrace, which can
    // sleep for ever), and swift test would wait for that pipe's end for ever.
    _ = posix_spawn_file_actions_addclosefrom_np(&actions, max(3, keep))
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigfillset(&defaults)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    if ownProcessGroup { posix_spawnattr_setpgroup(&attributes, 0) }
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (ownProcessGroup ? POSIX_SPAWN_SETPGROUP : 0)))
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard result == 0 else { return .failure(TestFailure("posix_spawn \(executable) failed: \(String(cString: strerror(result)))")) }
    return .success(pid)
}

/// pipe2(2), which the Glibc module does not export: both ends close-on-exec from birth, so
/// a child another test thread spawns at the same moment cannot inherit a write end (and
/// keep this pipe from ever reaching end-of-file).
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func posix_spawn_file_actions_addclosefrom_np(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

@_silgen_name("pipe2") private func pipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

/// The deadline of a process that may build Swift code. A fresh clone that copies the test
/// bundle from the machine's cache has built none of the bundler's tools (`.build-bundler`,
/// `.build-tools`, `.build-launcher`): the first `scripts/bundle` of the run builds them cold,
/// minutes on two cores the other tests share, and the rest wait for SwiftPM's lock.
let buildDeadline: TimeInterval = 1200

/// Runs a process to completion (killing it after a generous deadline) and captures both
/// output streams. posix_spawn, poll and waitpid, no Foundation `Process`: on Linux its
/// `run()` crashed the test process (SIGSEGV in memcpy) under many concurrent spawns, and
/// its `waitUntilExit()` spins at 100% CPU.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                deadline: TimeInterval = 120) throws -> ProcessResult {
    var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
    guard pipe2(&out, O_CLOEXEC) == 0 else { throw TestFailure("pipe2 failed: \(errno)") }
    guard pipe2(&err, O_CLOEXEC) == 0 else { close(out[0]); close(out[1]); throw TestFailure("pipe2 failed: \(errno)") }
    let spawned = spawn(executable, arguments, environment: environment ?? ProcessInfo.processInfo.environment) { actions in
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)
    }
    close(out[1])
    close(err[1])
    let pid: pid_t
    do { pid = try spawned.get() } catch {
        close(out[0]); close(err[0])
        throw error
    }

    // Read both pipes until both reach end-of-file, so a chatty process never blocks.
    var collected: [Int32: [UInt8]] = [out[0]: [], err[0]: []]
    var open = [out[0], err[0]]
    let giveUpAt = Date().addingTimeInterval(deadline)
    var killed = false
    var buffer = [UInt8](repeating: 0, count: 65536)
    while !open.isEmpty {
        var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&fds, nfds_t(fds.count), 200)
        if ready < 0 && errno != EINTR { break }
        if !killed && Date() > giveUpAt { kill(pid, SIGKILL); killed = true }
        for entry in fds where entry.revents != 0 {
            let count = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
            if count > 0 {
                collected[entry.fd]! += buffer[0..<count]
            } else if count == 0 || errno != EINTR {
                open.removeAll { $0 == entry.fd }
            }
        }
    }
    close(out[0])
    close(err[0])
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let signal = status & 0x7F
    return ProcessResult(status: signal == 0 ? (status >> 8) & 0xFF : signal,
                         stdout: String(decoding: collected[out[0]]!, as: UTF8.self),
                         stderr: String(decoding: collected[err[0]]!, as: UTF8.self),
                         signaled: signal != 0)
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

/// Removes a directory made by `makeTemporaryDirectory` and everything in it (as root, files
/// another user owns or a test made unreadable included). A failure is said, not thrown: it
/// costs disk, not a result.
func removeTemporaryDirectory(_ path: String) {
    do { try FileManager.default.removeItem(atPath: path) } catch {
        if let removed = try? runProcess("/bin/rm", ["-rf", path]), removed.status == 0 { return }
        print("could not remove \(path): \(error)")
    }
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
        pid = try spawn(executable, arguments, environment: environment, ownProcessGroup: ownProcessGroup) { actions in
            posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        }.get()
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
