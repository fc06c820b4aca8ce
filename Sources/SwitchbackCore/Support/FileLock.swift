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
        fd = try Self.lockedDescriptor(path: path, wait: true)!
    }

    private init(fd: Int32) { self.fd = fd }

    /// Takes the lock on `path` (created if needed); with `wait: false` returns nil at once
    /// when another process holds it (`LOCK_NB`).
    public static func acquire(path: String, wait: Bool) throws(SwitchbackError) -> FileLock? {
        try lockedDescriptor(path: path, wait: wait).map { FileLock(fd: $0) }
    }

    private static func lockedDescriptor(path: String, wait: Bool) throws(SwitchbackError) -> Int32? {
        let (fd, openError) = retryingInterrupts { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
        if fd < 0 { throw .system("Opening lock file", path: path, errno: openError) }
        let (_, lockError) = retryingInterrupts { flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) }
        if lockError == EWOULDBLOCK && !wait {
            close(fd)
            return nil
        }
        if lockError != 0 {
            close(fd)
            throw SwitchbackError(.lockFailed, "Locking \(path) failed: \(errorString(lockError)).", path: path, errno: lockError)
        }
        return fd
    }

    deinit { close(fd) }

    /// Runs `body` while holding the lock on `path`.
    public static func withLock<T>(at path: String, _ body: () throws(SwitchbackError) -> T) throws(SwitchbackError) -> T {
        let lock = try FileLock(path: path)
        defer { withExtendedLifetime(lock) {} }
        return try body()
    }
}
