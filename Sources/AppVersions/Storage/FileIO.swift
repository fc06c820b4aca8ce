#if canImport(Glibc)
import Glibc
#endif

/// The few POSIX file operations the stores need, with `EINTR` retried in one place and
/// descriptors closed on every path.
enum FileIO {
    /// A failed system call: which one, on what, and the `errno` it left.
    struct Failure: Error {
        let operation: String
        let path: String
        let errno: Int32

        var reason: String { "\(operation) failed: \(AppVersionsError.describe(errno: errno))" }
    }

    /// Calls `body` until it stops failing with `EINTR`; copies `errno` right after the call.
    static func retryingInterrupts<T: BinaryInteger>(
        _ operation: String, _ path: String, _ body: () -> T
    ) throws(Failure) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            throw Failure(operation: operation, path: path, errno: code)
        }
    }

    /// Closes `descriptor`, ignoring errors: used after another failure, or after `fsync` succeeded.
    static func close(_ descriptor: Int32) {
        _ = Glibc.close(descriptor)
    }

    /// Reads a whole file; `nil` if it does not exist.
    static func readFile(atPath path: String) throws(Failure) -> [UInt8]? {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw Failure(operation: "open", path: path, errno: code)
        }
        defer { close(descriptor) }
        var info = stat()
        _ = try retryingInterrupts("fstat", path) { fstat(descriptor, &info) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(info.st_size) + 1)
        var chunk = [UInt8](repeating: 0, count: max(65536, Int(info.st_size) + 1))
        while true {
            let count = try retryingInterrupts("read", path) {
                chunk.withUnsafeMutableBytes { buffer in Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return bytes
    }

    /// Replaces `path` with `bytes` so that readers see the old or the new content, never half.
    ///
    /// Writes a temporary file in the same directory, `fsync`s it, `rename`s it over
    /// `path`, then `fsync`s the directory so the rename itself is durable.
    static func replaceAtomically(_ path: String, with bytes: [UInt8], directory: String) throws(Failure) {
        let temporary = path + ".tmp"
        let descriptor = try retryingInterrupts("open", temporary) {
            Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        }
        do throws(Failure) {
            var offset = 0
            while offset < bytes.count {
                let written = try retryingInterrupts("write", temporary) {
                    bytes.withUnsafeBytes { buffer in
                        Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    }
                }
                offset += written
            }
            _ = try retryingInterrupts("fsync", temporary) { fsync(descriptor) }
        } catch {
            close(descriptor)
            _ = unlink(temporary)
            throw error
        }
        if Glibc.close(descriptor) != 0 {
            let code = errno
            _ = unlink(temporary)
            throw Failure(operation: "close", path: temporary, errno: code)
        }
        if rename(temporary, path) != 0 {
            let code = errno
            _ = unlink(temporary)
            throw Failure(operation: "rename", path: path, errno: code)
        }
        try fsyncDirectory(directory)
    }

    /// Makes a completed `rename` in `directory` durable.
    static func fsyncDirectory(_ directory: String) throws(Failure) {
        let descriptor = try retryingInterrupts("open", directory) {
            Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        defer { close(descriptor) }
        _ = try retryingInterrupts("fsync", directory) { fsync(descriptor) }
    }

    /// Creates `path` and its missing parents, like `mkdir -p`.
    static func makeDirectories(_ path: String) throws(Failure) {
        var info = stat()
        if stat(path, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR { return }
            throw Failure(operation: "mkdir", path: path, errno: ENOTDIR)
        }
        let parent = parentDirectory(of: path)
        if parent != path && !parent.isEmpty { try makeDirectories(parent) }
        if mkdir(path, 0o755) != 0 {
            let code = errno
            if code != EEXIST { throw Failure(operation: "mkdir", path: path, errno: code) }
        }
    }

    /// The directory part of a path (`"."` for a bare name).
    static func parentDirectory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        if slash == trimmed.startIndex { return "/" }
        return String(trimmed[..<slash])
    }

    /// A cheap identity of a file's current content: device, inode, size, mtime, ctime.
    struct Fingerprint: Equatable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let modified: timespec
        let changed: timespec

        static func == (a: Fingerprint, b: Fingerprint) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    /// The fingerprint of `path`, or nil if it does not exist.
    static func fingerprint(of path: String) throws(Failure) -> Fingerprint? {
        var info = stat()
        if stat(path, &info) != 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw Failure(operation: "stat", path: path, errno: code)
        }
        return Fingerprint(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modified: info.st_mtim, changed: info.st_ctim
        )
    }

    /// Opens (creating) `path` and takes an exclusive `flock(2)` on it, waiting as long as needed.
    ///
    /// The lock is released by ``unlock(_:)`` or, if the process dies, by the kernel.
    static func lockExclusively(_ path: String) throws(Failure) -> Int32 {
        let descriptor = try retryingInterrupts("open", path) {
            Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        }
        do throws(Failure) {
            _ = try retryingInterrupts("flock", path) { flock(descriptor, LOCK_EX) }
        } catch {
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Releases a lock taken by ``lockExclusively(_:)``.
    static func unlock(_ descriptor: Int32) {
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Removes a file; a missing file is fine.
    static func remove(_ path: String) throws(Failure) {
        if unlink(path) != 0 {
            let code = errno
            if code != ENOENT { throw Failure(operation: "unlink", path: path, errno: code) }
        }
    }
}
