#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

/// An exclusive advisory lock on a file, shared by every launcher and rollbackctl that
/// writes the same state directory. Wraps `flock(2)`; released when the value is closed
/// or the process dies.
///
/// The lock file must be ours: it is opened relative to its checked directory with
/// `O_NOFOLLOW` (the file layer, `CheckedDirectory`) and refused
/// (`.insecurePermissions`) when it is a link, not a regular file, owned by another user
/// than this one or root, or writable by others than its owner (see `StrictModes`). Waiting is bounded: a lock still
/// held after `defaultTimeout` seconds throws `.lockFailed` with a sentence that names the
/// file, so a process of another user that opened it cannot block the operator forever.
/// Once a wait for a path timed out, later waits for it in the same process fail at once:
/// a launcher start that writes under the lock several times pays the bound once.
public final class FileLock {
    /// How long `init(path:)` and `withLock` wait for a lock another process holds.
    public static let defaultTimeout: Double = 10
    private let fd: Int32

    /// Paths whose wait timed out in this process, guarded by `timedOutGuard`.
    nonisolated(unsafe) private static var timedOut: [String] = []
    nonisolated(unsafe) private static let timedOutGuard: UnsafeMutablePointer<pthread_mutex_t> = {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        return mutex
    }()

    private static func withTimedOut<T>(_ body: (inout [String]) -> T) -> T {
        pthread_mutex_lock(timedOutGuard)
        defer { pthread_mutex_unlock(timedOutGuard) }
        return body(&timedOut)
    }

    /// Waits until the lock on `path` (created if needed) is held, at most `timeout` seconds.
    public init(path: String, timeout: Double = defaultTimeout) throws(SwitchbackError) {
        fd = try Self.lockedDescriptor(path: path, timeout: timeout)!
    }

    private init(fd: Int32) { self.fd = fd }

    /// Takes the lock on `path` (created if needed); with `wait: false` returns nil at once
    /// when another process holds it (`LOCK_NB`), with `wait: true` waits at most `timeout`.
    public static func acquire(path: String, wait: Bool, timeout: Double = defaultTimeout) throws(SwitchbackError) -> FileLock? {
        try lockedDescriptor(path: path, timeout: wait ? timeout : nil).map { FileLock(fd: $0) }
    }

    /// A locked descriptor; nil when `timeout` is nil and the lock is held elsewhere.
    private static func lockedDescriptor(path: String, timeout: Double?) throws(SwitchbackError) -> Int32? {
        // Relative to the checked directory, never through a link (`CheckedDirectory.openFile`).
        let (parent, name) = FileSystem.split(path)
        let directory = try FileSystem.directory(parent)
        guard let fd = try FileSystem.layer({ () throws(FileError) in try directory.openFile(name, flags: O_RDWR | O_CREAT, mode: 0o600, what: "lock file") }) else {
            throw .system("Opening lock file", path: path, errno: ENOENT)
        }
        // Poll with LOCK_NB rather than block in LOCK_EX: a blocking flock cannot be bounded
        // without signals. 1 ms at first, doubling to 50 ms, so an uncontended wait is short.
        let waitedOutBefore = timeout != nil && withTimedOut { $0.contains(path) }
        let deadline = monotonicSeconds() + (waitedOutBefore ? 0 : timeout ?? 0)
        var pause: UInt32 = 1_000
        while true {
            let (_, lockError) = retryingInterrupts { flock(fd, LOCK_EX | LOCK_NB) }
            if lockError == 0 { return fd }
            if lockError != EWOULDBLOCK {
                close(fd)
                throw SwitchbackError(.lockFailed, "Locking \(path) failed: \(errorString(lockError)).", path: path, errno: lockError)
            }
            guard let timeout else {
                close(fd)
                return nil
            }
            if monotonicSeconds() >= deadline {
                close(fd)
                if !waitedOutBefore { withTimedOut { $0.append(path) } }
                throw SwitchbackError(.lockFailed, "The lock file \(path) is still held by another process after \(Int(timeout)) seconds; find it with 'fuser -v \(path)' and stop it (or wait for it to finish), then try again.", path: path, errno: lockError)
            }
            usleep(pause)
            pause = min(pause * 2, 50_000)
        }
    }

    deinit { close(fd) }

    /// Runs `body` while holding the lock on `path` (waiting at most `defaultTimeout`).
    public static func withLock<T>(at path: String, _ body: () throws(SwitchbackError) -> T) throws(SwitchbackError) -> T {
        let lock = try FileLock(path: path)
        defer { withExtendedLifetime(lock) {} }
        return try body()
    }

    private static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
