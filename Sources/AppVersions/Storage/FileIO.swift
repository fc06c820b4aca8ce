#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

/// The few POSIX file operations the stores need, with `EINTR` retried in one place and
/// descriptors closed on every path. Every write goes through SwitchbackFiles'
/// `CheckedDirectory`: the directory is opened and checked (owned by this user or root,
/// writable by no one else, no link on the way), and files are created, replaced, locked and
/// removed relative to its descriptor, never through a link.
enum FileIO {
    /// A failed system call: which one, on what, and the `errno` it left; or a directory the
    /// file layer refused (`refusal`, one sentence that says why and what to do).
    struct Failure: Error {
        let operation: String
        let path: String
        let errno: Int32
        var refusal: String? = nil

        var reason: String { refusal ?? "\(operation) failed: \(AppVersionsError.describe(errno: errno))" }

        init(operation: String, path: String, errno: Int32, refusal: String? = nil) {
            self.operation = operation
            self.path = path
            self.errno = errno
            self.refusal = refusal
        }

        init(_ error: FileError, operation: String) {
            self.init(operation: operation, path: error.path, errno: error.errno ?? 0,
                      refusal: error.code == .untrusted ? error.message : nil)
        }
    }

    /// Opens and checks `path` (creating it, and its missing parents, mode 0755, when asked).
    static func directory(_ path: String, creating: Bool = false) throws(Failure) -> CheckedDirectory {
        do {
            return try CheckedDirectory.open(absolute(path), what: "ledger directory", creating: creating ? 0o755 : nil)
        } catch {
            throw Failure(error, operation: creating ? "mkdir" : "open")
        }
    }

    /// `path`, made absolute against the working directory.
    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return path == "." ? cwd : cwd + "/" + path
    }

    /// The last component of `path`.
    static func fileName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
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
    /// In the checked `directory`: writes a temporary file `NAME.tmp` created new (`O_EXCL |
    /// O_NOFOLLOW`; a leftover, a link included, is removed first, never written through),
    /// `fsync`s it, `renameat`s it over `path` (a link there is replaced, never followed),
    /// then `fsync`s the directory so the rename itself is durable.
    static func replaceAtomically(_ path: String, with bytes: [UInt8], directory: String) throws(Failure) {
        try replaceAtomically(path, with: bytes, in: try self.directory(directory))
    }

    /// `replaceAtomically` in a directory already opened and checked.
    static func replaceAtomically(_ path: String, with bytes: [UInt8], in opened: CheckedDirectory) throws(Failure) {
        let name = fileName(of: path)
        do {
            try opened.replace(name, with: bytes, mode: 0o644, temporaryName: name + ".tmp")
        } catch {
            throw Failure(error, operation: "write")
        }
    }

    /// Makes a completed `rename` in `directory` durable.
    static func fsyncDirectory(_ directory: String) throws(Failure) {
        let opened = try self.directory(directory)
        do { try opened.sync() } catch { throw Failure(error, operation: "fsync") }
    }

    /// Creates `path` and its missing parents, like `mkdir -p`, each with `mkdirat` in a
    /// directory that passed the checks, and checked after.
    @discardableResult
    static func makeDirectories(_ path: String) throws(Failure) -> CheckedDirectory {
        try directory(path, creating: true)
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

    /// Opens (creating) `path` in its checked directory, never through a link, and takes an
    /// exclusive `flock(2)` on it, waiting as long as needed.
    ///
    /// The lock is released by ``unlock(_:)`` or, if the process dies, by the kernel.
    static func lockExclusively(_ path: String, in checked: CheckedDirectory? = nil) throws(Failure) -> Int32 {
        let opened: CheckedDirectory
        if let checked { opened = checked } else { opened = try directory(parentDirectory(of: path)) }
        let descriptor: Int32
        do {
            descriptor = try opened.openFile(fileName(of: path), flags: O_RDWR | O_CREAT, mode: 0o644, what: "lock file")!
        } catch {
            throw Failure(error, operation: "open")
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

    /// Removes a file with `unlinkat` in its checked directory; a missing file is fine.
    static func remove(_ path: String) throws(Failure) {
        let opened: CheckedDirectory
        do throws(Failure) { opened = try directory(parentDirectory(of: path)) } catch {
            if error.errno == ENOENT { return }
            throw error
        }
        do { try opened.remove(fileName(of: path)) } catch { throw Failure(error, operation: "unlink") }
    }
}
