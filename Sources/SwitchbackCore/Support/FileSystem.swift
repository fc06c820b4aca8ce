#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

/// Small wrappers of POSIX file calls: whole-file reads, crash-safe replacement and
/// durable appends. Every descriptor is closed on every path.
///
/// `read`, `replace` and `appendDurably` are for files Switchback trusts (the manifest, the
/// state directory's files): they never follow a symbolic link as the last component
/// (`O_NOFOLLOW`) and refuse, with `.insecurePermissions`, a file that is not regular, is
/// owned by another user than this one or root, or is writable by others than its owner (`StrictModes`; checked
/// with `fstat` on the opened descriptor, so the file checked is the file read).
public enum FileSystem {
    /// Reads a whole trusted file. Returns nil when it does not exist; throws
    /// `.insecurePermissions` for a link or a file another user could write, and on any
    /// other failure.
    public static func read(_ path: String, limit: Int = 16 << 20) throws(SwitchbackError) -> [UInt8]? {
        // O_NONBLOCK: a FIFO put in place of a file must not hang the open (no effect on files).
        guard let fd = try StrictModes.openNoFollow(path, what: "file", flags: O_RDONLY | O_NONBLOCK) else { return nil }
        defer { close(fd) }
        let info = try StrictModes.checkOpenFile(fd, path: path, what: "file")
        return try readToEnd(fd, path: path, limit: limit, regularFileSize: Int(info.st_size))
    }

    /// Reads `fd` (a file or a pipe) to its end; `path` names it in errors. For a regular file
    /// whose size `fstat` gave, a read that returns less than it asked for is the end: the
    /// launcher reads four small files at every start, and that saves a `read` each.
    public static func readToEnd(_ fd: Int32, path: String, limit: Int = 16 << 20, regularFileSize: Int? = nil) throws(SwitchbackError) -> [UInt8] {
        // The chunk is a temporary allocation, never zero-filled (the launcher reads its small
        // files at every start).
        var bytes: [UInt8] = []
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16 << 10) { (chunk) throws(SwitchbackError) -> [UInt8] in
            while true {
                let (count, readError) = retryingInterrupts { Glibc.read(fd, chunk.baseAddress, chunk.count) }
                if count < 0 { throw .system("Reading", path: path, errno: readError) }
                if count == 0 { return bytes }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[0..<count]))
                if bytes.count > limit {
                    throw SwitchbackError(.ioFailure, "\(path) is larger than \(limit) bytes; it is not a file Switchback wrote.", path: path)
                }
                // Short of both the chunk and the size fstat gave: a regular file's end.
                if let size = regularFileSize, count < chunk.count, bytes.count >= size { return bytes }
            }
        }
    }

    /// Replaces `path` with `bytes` so that readers see the old or the new content, never
    /// half: the directory is opened and checked (`directory(_:)`), then, relative to its
    /// descriptor, a temporary file `NAME.tmp-PID` is created new (`O_EXCL | O_NOFOLLOW`; a
    /// leftover there, a link included, is removed first, never written through), fsynced,
    /// renamed over `path` with `renameat` (a link there is replaced, never followed), and
    /// the directory fsynced. With `durable: false` the two fsyncs are skipped (for caches
    /// whose loss is harmless); with `exactMode` the file gets `mode` whatever the umask.
    /// A directory another user could change gets no write (`.insecurePermissions`).
    public static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o600, exactMode: Bool = false,
                               durable: Bool = true, what: String = "directory") throws(SwitchbackError) {
        let (parent, name) = split(path)
        let directory = try directory(parent, what: what)
        try layer { () throws(FileError) in try directory.replace(name, with: bytes, mode: mode, exactMode: exactMode, durable: durable) }
    }

    /// Appends `bytes` with one `write(2)` on an O_APPEND descriptor, then fsyncs, so a
    /// crash leaves either the whole record or (rarely) a torn last line readers skip. The
    /// file is opened relative to its checked directory, never through a link
    /// (`.insecurePermissions` for a link at `path` or a file another user could write).
    public static func appendDurably(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws(SwitchbackError) {
        let (parent, name) = split(path)
        let directory = try directory(parent)
        guard let fd = try layer({ () throws(FileError) in try directory.openFile(name, flags: O_WRONLY | O_CREAT | O_APPEND, mode: mode) }) else {
            throw .system("Opening", path: path, errno: ENOENT)
        }
        defer { close(fd) }
        try layer { () throws(FileError) in try CheckedDirectory.writeAll(fd, bytes, path: path) }
        if fsync(fd) != 0 { throw .system("Syncing", path: path, errno: errno) }
    }

    /// Creates a directory and its parents with `mode` 0700 (existing ones are left alone),
    /// each made with `mkdirat` in a directory that passed the strict checks and checked
    /// after: nothing is made below a directory another user could change, nor through a link.
    public static func createDirectory(_ path: String, what: String = "directory") throws(SwitchbackError) {
        _ = try directory(path, what: what, creating: true)
    }

    /// `stat(2)`; nil when the path does not exist.
    public static func status(_ path: String) throws(SwitchbackError) -> stat? {
        var info = stat()
        if stat(path, &info) != 0 {
            let error = errno
            if error == ENOENT || error == ENOTDIR { return nil }
            throw .system("Inspecting", path: path, errno: error)
        }
        return info
    }

    /// The directory part of `path` ("/" for a top-level file, "." for a bare name).
    public static func parentDirectory(of path: String) -> String {
        // On the UTF-8 view: Character search would load the grapheme tables at every start.
        guard let slash = path.utf8.lastIndex(of: 0x2F) else { return "." }
        let parent = String(Substring(path.utf8[..<slash]))
        return parent.isEmpty ? "/" : parent
    }

    /// The absolute path of this process's executable, symlinks resolved: one `readlink(2)`
    /// of /proc/self/exe (the kernel resolves it; `realpath` would walk every component).
    public static func executablePath() -> String? {
        // A temporary buffer, not a zero-filled array: this runs at every start.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(PATH_MAX) + 1) { buffer in
            let count = readlink("/proc/self/exe", buffer.baseAddress!, buffer.count - 1)
            guard count > 0 else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[0..<count]), as: UTF8.self)
        }
    }

    /// `realpath(3)`: the absolute path with symlinks resolved, or nil.
    public static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
