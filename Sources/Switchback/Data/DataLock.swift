#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

/// The app's data lock, `<dataDirectory>.lock` beside the data: runs that write the data
/// hold it shared; the downgrade entry point holds it exclusively. Released when the value
/// goes away (or the process exits).
final class DataLock {
    private let fd: Int32

    /// Takes the lock, waiting at most `waitSeconds` (nil: as long as it takes). Nil when
    /// the lock file cannot be opened or the wait ran out (`timedOut` says which).
    init?(dataDirectory: String, exclusive: Bool, waitSeconds: Double?, timedOut: UnsafeMutablePointer<Bool>? = nil) {
        // In the checked directory that holds the data (made if missing; it may be sticky, like
        // /tmp: see `TrustPolicy.stickyHolder`), never through a link.
        let path = SDKFiles.absolute(dataDirectory) + ".lock"
        guard let directory = try? SDKFiles.makeDirectory(SDKFiles.parent(of: path), what: "directory of the data", policy: .stickyHolder),
              let fd = try? directory.openFile(String(path.split(separator: "/").last ?? ""), flags: O_RDWR | O_CREAT,
                                               mode: 0o600, what: "data lock file") else { return nil }
        self.fd = fd
        let operation = exclusive ? LOCK_EX : LOCK_SH
        let deadline = waitSeconds.map { SDKFiles.monotonicSeconds() + $0 }
        while flock(fd, operation | (deadline == nil ? 0 : LOCK_NB)) != 0 {
            let failure = errno
            if failure == EINTR { continue }
            if failure == EWOULDBLOCK, let deadline, SDKFiles.monotonicSeconds() < deadline {
                usleep(10_000)
                continue
            }
            timedOut?.pointee = failure == EWOULDBLOCK
            close(fd)
            return nil
        }
    }

    deinit { close(fd) }

    /// Whether another process holds the lock in a way that keeps this one out (false when
    /// the lock file cannot be opened at all: then nobody can hold it, and callers go on).
    static func isHeldElsewhere(dataDirectory: String, exclusive: Bool) -> Bool {
        guard let (directory, name) = try? SDKFiles.holder(of: SDKFiles.absolute(dataDirectory) + ".lock", policy: .stickyHolder),
              let fd = try? directory.openFile(name, flags: O_RDWR, what: "data lock file") else { return false }
        defer { close(fd) }
        let taken = flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0
        if taken { flock(fd, LOCK_UN) }
        return !taken
    }
}
