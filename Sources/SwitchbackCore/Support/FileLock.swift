#if canImport(Glibc)
import Glibc
#endif

/// An exclusive advisory lock on a file, shared by every launcher and rollbackctl that
/// writes the same state directory. Wraps `flock(2)`; released when the value is closed
/// or the process dies.
public final class FileLock {
    private let fd: Int32

    /// Blocks until the lock on `path` (created if needed) is held.
    public init(path: String) throws(SwitchbackError) {
        let (fd, openError) = retryingInterrupts { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
        if fd < 0 { throw .system("Opening lock file", path: path, errno: openError) }
        let (_, lockError) = retryingInterrupts { flock(fd, LOCK_EX) }
        if lockError != 0 {
            close(fd)
            throw SwitchbackError(.lockFailed, "Locking \(path) failed: \(errorString(lockError)).", path: path, errno: lockError)
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Runs `body` while holding the lock on `path`.
    public static func withLock<T>(at path: String, _ body: () throws(SwitchbackError) -> T) throws(SwitchbackError) -> T {
        let lock = try FileLock(path: path)
        defer { withExtendedLifetime(lock) {} }
        return try body()
    }
}
