#if canImport(Glibc)
import Glibc
#endif

/// A directory opened once and checked on its descriptor, and the only way Switchback's
/// writers (the launcher, rollbackctl, rollbackctl-remote, the SDK, AppVersions) create,
/// replace, lock or remove files in a directory someone else might reach.
///
/// `open` walks the path from `/` one component at a time with `openat(O_NOFOLLOW)`, and
/// checks each directory with `fstat` of the descriptor it opened (`TrustPolicy`): the
/// directory checked is the directory used, and a name swapped for a link after the check
/// changes nothing. A link on the way is followed only when its owner is trusted, and never
/// as the last component. Missing directories are made with `mkdirat` in a directory that
/// already passed, then opened without following links and checked like the others, so a
/// directory that fails the check gets no write at all, not even a `mkdir` below it.
///
/// Every file operation is relative to the descriptor, with `O_NOFOLLOW | O_CLOEXEC`:
/// temporary files are created new (`O_EXCL`), replaced with `renameat` (a link at the final
/// name is replaced, never followed), removed with `unlinkat`. No path string is opened.
public final class CheckedDirectory: @unchecked Sendable {
    /// The open directory (`O_RDONLY | O_DIRECTORY`), closed when the value goes away.
    public let descriptor: Int32
    /// The path it was opened at, for messages.
    public let path: String
    /// What the directory is, in messages ("state directory").
    public let what: String
    public let policy: TrustPolicy

    init(descriptor: Int32, path: String, what: String, policy: TrustPolicy) {
        self.descriptor = descriptor
        self.path = path
        self.what = what
        self.policy = policy
    }

    deinit { close(descriptor) }

    /// Links followed in one path before giving up, as the kernel's own limit.
    static let maximumLinks = 40
    /// `O_PATH` (Linux): a descriptor to walk through, which needs no read permission.
    static let pathOnly: Int32 = 0o10_000_000

    /// Opens and checks the directory at `path` (absolute), as described above. With
    /// `creating` set, missing directories (the last and those above it) are made with that
    /// mode; otherwise a missing one throws `.system` with ENOENT. Throws `.untrusted` with a
    /// sentence when a directory or link on the way fails `policy`, or the last component is
    /// a link or not a directory.
    public static func open(_ path: String, what: String, creating mode: mode_t? = nil,
                            policy: TrustPolicy = .strict) throws(FileError) -> CheckedDirectory {
        guard path.utf8.first == 0x2F else {
            throw FileError(.untrusted, "The \(what) \(path) is a relative path; refusing to write there: give an absolute path.", path: path)
        }
        let (root, rootError) = retrying { Glibc.open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        if root < 0 { throw .system("Opening directory", path: "/", errno: rootError) }
        var opened: [Int32] = [root]        // the directories walked; the last is where we are
        var shown = ""                      // the path walked so far, for messages ("" for /)
        var isReadable = true               // the last descriptor was opened O_RDONLY, not O_PATH
        defer { for fd in opened { close(fd) } }
        var pending = components(path)
        pending.reverse()
        var links = 0
        while let component = pending.popLast() {
            if component == "." { continue }
            if component == ".." {
                if opened.count > 1 {
                    close(opened.removeLast())
                    shown = String(Substring(shown.utf8[..<(shown.utf8.lastIndex(of: 0x2F) ?? shown.utf8.startIndex)]))
                    isReadable = false
                }
                continue
            }
            let current = opened.last!
            // Built only for a message or a check that needs it (a refusal, a failure).
            func here() -> String { shown + "/" + component }
            let isLast = pending.isEmpty
            var info = stat()
            let (found, statError) = retrying { fstatat(current, component, &info, AT_SYMLINK_NOFOLLOW) }
            if found != 0 {
                guard statError == ENOENT, let mode else { throw .system("Opening directory", path: here(), errno: statError) }
                // Made in a directory that passed; checked below like any other.
                let (made, makeError) = retrying { mkdirat(current, component, mode) }
                if made != 0 && makeError != EEXIST { throw .system("Creating directory", path: here(), errno: makeError) }
            } else if FileMode.type(info) == FileMode.symbolicLink {
                if isLast {
                    throw FileError(.untrusted, "The \(what) \(here()) is a symbolic link; refusing to write through it: use the real path instead.", path: here())
                }
                if let refusal = policy.refusal(info, here(), .link, what) { throw FileError(.untrusted, refusal, path: here()) }
                links += 1
                if links > maximumLinks {
                    throw FileError(.untrusted, "The \(what) \(path) goes through more than \(maximumLinks) symbolic links; refusing to follow them: use the real path instead.", path: path)
                }
                guard let target = readLink(current, component) else {
                    throw FileError(.untrusted, "The symbolic link \(here()) on the way to the \(what) changed while it was checked; refusing to follow it: try again.", path: here())
                }
                if target.utf8.first == 0x2F {
                    for fd in opened.dropFirst() { close(fd) }
                    opened.removeSubrange(1...)
                    shown = ""
                }
                pending.append(contentsOf: components(target).reversed())
                continue
            }
            let flags = (isLast ? O_RDONLY : pathOnly) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
            let (fd, openError) = retrying { openat(current, component, flags) }
            if fd < 0 {
                if openError == ELOOP || openError == ENOTDIR {
                    var now = stat()
                    let isLink = fstatat(current, component, &now, AT_SYMLINK_NOFOLLOW) == 0 && FileMode.type(now) == FileMode.symbolicLink
                    // A file where a directory should be is a plain failure (ENOTDIR); a link
                    // that appeared since the fstatat above is a refusal.
                    if !isLink { throw .system("Opening directory", path: here(), errno: ENOTDIR) }
                    throw FileError(.untrusted, "The \(what) \(here()) is a symbolic link; refusing to write through it: use the real path instead.", path: here(), errno: openError)
                }
                throw .system("Opening directory", path: here(), errno: openError)
            }
            opened.append(fd)
            shown += "/"
            shown += component
            isReadable = isLast
            if !isLast { try check(fd, path: shown, role: .ancestor, what: what, policy: policy) }
        }
        var last = opened.removeLast()
        if !isReadable {
            let (reopened, reopenError) = retrying { openat(last, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            close(last)
            if reopened < 0 { throw .system("Opening directory", path: path, errno: reopenError) }
            last = reopened
        }
        do { try check(last, path: path, role: .directory, what: what, policy: policy) } catch {
            close(last)
            throw error
        }
        return CheckedDirectory(descriptor: last, path: path, what: what, policy: policy)
    }

    /// Opens (with `creating`, makes with `mkdirat` first) the directory `name` in this one,
    /// never following a link, and checks it as `open` does. `what` names it in messages.
    public func subdirectory(_ name: String, what: String? = nil, creating mode: mode_t? = nil) throws(FileError) -> CheckedDirectory {
        let what = what ?? self.what
        let here = child(name)
        if let mode {
            let (made, makeError) = Self.retrying { mkdirat(descriptor, name, mode) }
            if made != 0 && makeError != EEXIST { throw .system("Creating directory", path: here, errno: makeError) }
        }
        let (fd, openError) = Self.retrying { openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        if fd < 0 {
            if openError == ELOOP || openError == ENOTDIR {
                let isLink = status(of: name).map { FileMode.type($0) == FileMode.symbolicLink } ?? false
                if !isLink { throw .system("Opening directory", path: here, errno: ENOTDIR) }
                throw FileError(.untrusted, "The \(what) \(here) is a symbolic link; refusing to write there: remove it, and Switchback makes the directory again.", path: here, errno: openError)
            }
            throw .system("Opening directory", path: here, errno: openError)
        }
        do { try Self.check(fd, path: here, role: .directory, what: what, policy: policy) } catch {
            close(fd)
            throw error
        }
        return CheckedDirectory(descriptor: fd, path: here, what: what, policy: policy)
    }

    /// Replaces the file `name` with `bytes` so that readers see the old or the new content,
    /// never half: a temporary file (`temporaryName`, by default `NAME.tmp-PID`) created new
    /// with `O_EXCL | O_NOFOLLOW` (a leftover at that name, a link included, is removed
    /// first, never written through), written, fsynced, then `renameat` over `name` (a link
    /// there is replaced, not followed) and the directory fsynced. With `durable: false` the
    /// two fsyncs are skipped. With `exactMode` the file gets `mode` whatever the umask.
    public func replace(_ name: String, with bytes: [UInt8], mode: mode_t = 0o600, exactMode: Bool = false,
                        durable: Bool = true, temporaryName: String? = nil) throws(FileError) {
        let temporary = temporaryName ?? "\(name).tmp-\(getpid())"
        func create() -> (Int32, Int32) {
            Self.retrying { openat(descriptor, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }
        }
        var (fd, openError) = create()
        if fd < 0 && openError == EEXIST {
            unlinkat(descriptor, temporary, 0)
            (fd, openError) = create()
        }
        if fd < 0 { throw .system("Creating", path: child(temporary), errno: openError) }
        do throws(FileError) {
            if exactMode, fchmod(fd, mode) != 0 { throw FileError.system("Setting the mode of", path: child(temporary), errno: errno) }
            try Self.writeAll(fd, bytes, path: child(temporary))
            if durable, fsync(fd) != 0 { throw FileError.system("Syncing", path: child(temporary), errno: errno) }
        } catch {
            close(fd)
            unlinkat(descriptor, temporary, 0)
            throw error
        }
        close(fd)
        if renameat(descriptor, temporary, descriptor, name) != 0 {
            let renameError = errno
            unlinkat(descriptor, temporary, 0)
            throw .system("Renaming \(child(temporary)) to", path: child(name), errno: renameError)
        }
        if durable { try sync() }
    }

    /// Creates the file `name`, which must not exist (`O_CREAT | O_EXCL | O_NOFOLLOW`: a link
    /// there is an EEXIST failure, never followed), with exactly `mode` whatever the umask,
    /// writes `bytes` and fsyncs it; on failure the partial file is removed.
    public func createNew(_ name: String, with bytes: [UInt8], mode: mode_t) throws(FileError) {
        let (fd, openError) = Self.retrying { openat(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }
        if fd < 0 { throw .system("Creating", path: child(name), errno: openError) }
        do throws(FileError) {
            if fchmod(fd, mode) != 0 { throw FileError.system("Setting the mode of", path: child(name), errno: errno) }
            try Self.writeAll(fd, bytes, path: child(name))
            if fsync(fd) != 0 { throw FileError.system("Syncing", path: child(name), errno: errno) }
            if close(fd) != 0 { throw FileError.system("Closing", path: child(name), errno: errno) }
        } catch {
            close(fd)
            unlinkat(descriptor, name, 0)
            throw error
        }
    }

    /// Publishes `bytes` as the file `name` only if nothing is there yet: a temporary file is
    /// written and fsynced whole, then `linkat`ed to `name`, which fails with EEXIST when
    /// another process published first (a reader sees no file or the whole file, never part
    /// of one). Returns false when `name` already existed; the caller reads the winner's.
    /// Needs no lock, so a caller that holds one can use it.
    public func publishNew(_ name: String, with bytes: [UInt8], mode: mode_t) throws(FileError) -> Bool {
        let temporary = "\(name).new-\(getpid())"
        unlinkat(descriptor, temporary, 0)
        try createNew(temporary, with: bytes, mode: mode)
        defer { unlinkat(descriptor, temporary, 0) }
        if linkat(descriptor, temporary, descriptor, name, 0) != 0 {
            let linkError = errno
            if linkError == EEXIST { return false }
            throw .system("Publishing \(child(temporary)) as", path: child(name), errno: linkError)
        }
        try sync()
        return true
    }

    /// Opens the file `name` with `flags` (`O_CREAT` with `mode` to create it), adding
    /// `O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK` (a FIFO put there cannot hang the open), then
    /// checks the descriptor: a regular file the policy trusts (`role .file`). A link at
    /// `name` throws `.untrusted`. Nil when it does not exist and `O_CREAT` was not given.
    /// The caller closes the descriptor.
    public func openFile(_ name: String, flags: Int32, mode: mode_t = 0o600, what fileWhat: String = "file") throws(FileError) -> Int32? {
        let here = child(name)
        let (fd, openError) = Self.retrying { openat(descriptor, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode) }
        if fd < 0 {
            if openError == ENOENT && flags & O_CREAT == 0 { return nil }
            if openError == ELOOP {
                throw FileError(.untrusted, "The \(fileWhat) \(here) is a symbolic link; refusing to follow it: replace it with a regular file (or remove it).", path: here, errno: openError)
            }
            throw .system("Opening", path: here, errno: openError)
        }
        var info = stat()
        if fstat(fd, &info) != 0 {
            let statError = errno
            close(fd)
            throw .system("Inspecting", path: here, errno: statError)
        }
        if let refusal = policy.refusal(info, here, .file, fileWhat) {
            close(fd)
            throw FileError(.untrusted, refusal, path: here)
        }
        guard FileMode.type(info) == FileMode.regular else {
            close(fd)
            throw FileError(.untrusted, "The \(fileWhat) \(here) is not a regular file; refusing to use it: remove it (Switchback makes the file again).", path: here)
        }
        // Back to blocking I/O for the caller (flock, fsync do not care; reads and writes might).
        let status = fcntl(fd, F_GETFL)
        if status >= 0 && flags & O_NONBLOCK == 0 { _ = fcntl(fd, F_SETFL, status & ~O_NONBLOCK) }
        return fd
    }

    /// Removes the file (or, with `directory`, the empty directory) `name`: `unlinkat`, which
    /// removes a link itself, never its target. A missing one is fine.
    public func remove(_ name: String, directory: Bool = false) throws(FileError) {
        if unlinkat(descriptor, name, directory ? AT_REMOVEDIR : 0) != 0 {
            let removeError = errno
            if removeError != ENOENT { throw .system("Removing", path: child(name), errno: removeError) }
        }
    }

    /// Renames `name` to `newName` in `target` (this directory by default): `renameat`,
    /// which moves a link itself and replaces one at the new name, never following either.
    public func rename(_ name: String, to newName: String, in target: CheckedDirectory? = nil) throws(FileError) {
        let destination = target ?? self
        if renameat(descriptor, name, destination.descriptor, newName) != 0 {
            throw .system("Renaming \(child(name)) to", path: destination.child(newName), errno: errno)
        }
    }

    /// The `lstat` of `name` in this directory (`fstatat` with `AT_SYMLINK_NOFOLLOW`); nil
    /// when it does not exist.
    public func status(of name: String) -> stat? {
        var info = stat()
        return fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// The names in this directory (without `.` and `..`).
    public func names() -> [String] {
        let copy = dup(descriptor)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(stream) }
        var result: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { result.append(name) }
        }
        return result
    }

    /// fsyncs the directory, so a rename or a new file in it survives a power cut.
    public func sync() throws(FileError) {
        if fsync(descriptor) != 0 { throw .system("Syncing directory", path: path, errno: errno) }
    }

    /// The path of `name` in this directory, for messages.
    public func child(_ name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

    // MARK: -

    static func check(_ fd: Int32, path: @autoclosure () -> String, role: TrustPolicy.Role, what: String, policy: TrustPolicy) throws(FileError) {
        var info = stat()
        if fstat(fd, &info) != 0 { throw .system("Inspecting", path: path(), errno: errno) }
        guard FileMode.type(info) == FileMode.directory else {
            throw FileError(.untrusted, "The \(what) \(path()) is not a directory; refusing to write there: use the path of a directory instead.", path: path())
        }
        // The policy gets the path for its sentence; the common case (owned by us or root,
        // not writable by others) decides from `info` alone, so skip building it then.
        if info.st_mode & 0o022 == 0 && (info.st_uid == 0 || info.st_uid == geteuid()) { return }
        let shown = path()
        if let refusal = policy.refusal(info, shown, role, what) { throw FileError(.untrusted, refusal, path: shown) }
    }

    static func readLink(_ directory: Int32, _ name: String) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(PATH_MAX) + 1) { buffer in
            let count = readlinkat(directory, name, buffer.baseAddress!, buffer.count - 1)
            guard count > 0 else { return nil }
            return String(decoding: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<count]), as: UTF8.self)
        }
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR; `path` names it in errors.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(FileError) {
        var offset = 0
        while offset < bytes.count {
            let (written, writeError) = bytes.withUnsafeBytes { buffer in
                retrying { write(fd, buffer.baseAddress! + offset, buffer.count - offset) }
            }
            if written < 0 { throw .system("Writing", path: path, errno: writeError) }
            offset += written
        }
    }

    /// The non-empty components of `path`.
    /// One pass over the bytes: a generic `split` cost some 60,000 instructions per path,
    /// paid by every start of an app whose SDK opens its data directories.
    static func components(_ path: String) -> [String] {
        var result: [String] = []
        result.reserveCapacity(8)
        var text = path
        text.withUTF8 { bytes in
            var start = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == 0x2F {
                if index > start { result.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)) }
                start = index + 1
            }
        }
        return result
    }

    /// Runs a system call, retrying while it fails with EINTR; the errno copied right after.
    @inline(__always)
    static func retrying<T: BinaryInteger>(_ call: () -> T) -> (T, Int32) {
        while true {
            let result = call()
            if result >= 0 { return (result, 0) }
            let error = errno
            if error != EINTR { return (result, error) }
        }
    }
}
