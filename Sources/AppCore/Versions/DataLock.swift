#if canImport(Glibc)
import Glibc
#endif

/// A lock on the sample app's data, beside the data directory (`<data>.lock`): commands
/// that read or write notes hold it shared for their whole run, start-up included; the
/// downgrade entry point holds it exclusively. So a revert never runs while a `note add`
/// is half done, and a `note add` that starts during a revert waits, then migrates again
/// (which republishes the data state, and the launcher converts the data back once more
/// before the previous slot runs). Released when the process exits.
struct DataLock {
    let fd: Int32

    /// Waits for the lock; nil when the lock file cannot be opened (the app goes on
    /// without it rather than refuse to run).
    init?(dataDirectory: String, exclusive: Bool) {
        let path = dataDirectory + ".lock"
        makeDirectory(String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]))
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        while flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            guard errno == EINTR else { close(fd); return nil }
        }
    }
}
