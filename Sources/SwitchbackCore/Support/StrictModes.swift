#if canImport(Glibc)
import Glibc
#endif

/// The checks, modelled on sshd's StrictModes, that every file the launcher trusts must
/// pass: the bundle, its manifest, the slots and the libraries they need, the state
/// directory and each file in it.
///
/// - A trusted file or directory is owned by the effective user or root and is not writable
///   by group or others.
/// - Every directory on the way to it, from `/` down, passes the same check, except that a
///   *sticky* directory (mode +t, like /tmp) may be writable by others when it is an
///   ancestor: there nobody else can rename or remove our entries. The directory that holds
///   a trusted file gets no such exception.
/// - Symbolic links on the way are resolved one link at a time: each link must be owned by
///   the effective user or root, and its target is walked by the same rules. Where a caller
///   expects no link (the state directory, state files, the manifest) the last component is
///   opened with `O_NOFOLLOW` and a link is refused.
public enum StrictModes {
    /// Links followed in one path before giving up, as the kernel's own limit.
    static let maximumLinks = 40

    /// Throws `.insecurePermissions` unless `info` (of `path`) is owned by this user or root
    /// and not writable by group or others; `sticky` accepts a world-writable sticky
    /// directory (an ancestor). `what` names the file in the sentence ("state directory").
    public static func checkOwnerAndMode(_ info: stat, path: String, what: @autoclosure () -> String, sticky: Bool = false) throws(SwitchbackError) {
        let me = geteuid()
        let mode = info.st_mode & 0o7777
        // Built only on refusal: this runs some 40 times per start.
        func found() -> String { "owner uid \(info.st_uid), mode \(String(mode, radix: 8))" }
        if info.st_uid != me && info.st_uid != 0 {
            throw SwitchbackError(.insecurePermissions, "The \(what()) \(path) is owned by another user (\(found())); refusing to trust it: run 'chown \(me) \(path)' or remove it.", path: path)
        }
        if mode & mode_t(S_IWGRP | S_IWOTH) != 0 && !(sticky && mode & mode_t(S_ISVTX) != 0) {
            throw SwitchbackError(.insecurePermissions, "The \(what()) \(path) is writable by other users (\(found())); refusing to trust it: run 'chmod go-w \(path)'.", path: path)
        }
    }

    /// Walks `path` (absolute) from `/` and returns it with every symbolic link resolved.
    /// Each directory on the way and each link passes the ownership and mode check (an
    /// ancestor may be sticky and world-writable, the directory holding the last component
    /// may not); the last component itself is only resolved — callers open it with
    /// `O_NOFOLLOW` and check the descriptor. With `followLast: false` a link as the last
    /// component is refused. Returns nil when a component does not exist.
    public static func resolve(_ path: String, what: String, followLast: Bool = true, strictHolder: Bool = true) throws(SwitchbackError) -> String? {
        guard path.utf8.first == 0x2F else {
            throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is a relative path; refusing to trust it: give an absolute path.", path: path)
        }
        var pending = components(path).reversed() as [Substring]
        var resolved = ""
        var links = 0
        var checked: (directory: String, strictly: Bool)?  // the directory most recently checked
        while let component = pending.popLast() {
            if component == "." { continue }
            if component == ".." {
                resolved = FileSystem.parentDirectory(of: resolved.isEmpty ? "/" : resolved)
                if resolved == "/" { resolved = "" }
                continue
            }
            let directory = resolved.isEmpty ? "/" : resolved
            // With no component left after this one, `directory` holds the last one: no
            // sticky exception there (unless the caller checks that directory itself).
            let strictly = pending.isEmpty && strictHolder
            if checked?.directory != directory || (strictly && checked?.strictly == false) {
                guard let info = try linkStatus(directory) else { return nil }
                try checkOwnerAndMode(info, path: directory, what: pending.isEmpty ? "directory of the \(what)" : "directory above the \(what)",
                                      sticky: !strictly)
                checked = (directory, strictly)
            }
            let candidate = resolved + "/" + component
            guard let info = try linkStatus(candidate) else { return nil }
            if info.st_mode & S_IFMT == S_IFLNK {
                if pending.isEmpty && !followLast {
                    let target = FileSystem.resolved(candidate).map { " (\($0))" } ?? ""
                    throw SwitchbackError(.insecurePermissions, "The \(what) \(candidate) is a symbolic link; refusing to follow it: use the real path\(target) instead.", path: candidate)
                }
                let me = geteuid()
                if info.st_uid != me && info.st_uid != 0 {
                    throw SwitchbackError(.insecurePermissions, "The symbolic link \(candidate) on the way to the \(what) is owned by another user (owner uid \(info.st_uid)); refusing to follow it: remove it or run 'chown -h \(me) \(candidate)'.", path: candidate)
                }
                links += 1
                if links > maximumLinks {
                    throw SwitchbackError(.insecurePermissions, "The \(what) \(path) goes through more than \(maximumLinks) symbolic links; refusing to follow them: point to the file directly.", path: path)
                }
                guard let target = readLink(candidate) else { return nil }
                if target.utf8.first == 0x2F { resolved = "" }
                pending.append(contentsOf: components(target).reversed())
                continue
            }
            if !pending.isEmpty && info.st_mode & S_IFMT != S_IFDIR { return nil }
            resolved = candidate
        }
        return resolved.isEmpty ? "/" : resolved
    }

    /// Checks the directory at `path`, the top of a trusted tree (the bundle root, the state
    /// directory): not a link, owned by this user or root, not writable by group or others;
    /// its ancestors are walked as `resolve` does, a sticky one accepted. Returns false when
    /// it does not exist.
    @discardableResult
    public static func checkDirectory(_ path: String, what: String) throws(SwitchbackError) -> Bool {
        try resolveDirectory(path, what: what, followLast: false) != nil
    }

    /// `checkDirectory`, for a directory that may itself be reached through links (the
    /// directory of a library, /lib → usr/lib): returns it resolved, or nil when missing.
    static func resolveDirectory(_ path: String, what: String, followLast: Bool = true) throws(SwitchbackError) -> String? {
        guard let resolved = try resolve(path, what: what, followLast: followLast, strictHolder: false),
              let info = try linkStatus(resolved) else { return nil }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is not a directory; refusing to use it: remove it or choose another path.", path: path)
        }
        try checkOwnerAndMode(info, path: resolved, what: what)
        return resolved
    }

    /// `fstat(2)` of an open descriptor, then the strict check: owned by this user or root,
    /// not writable by group or others (`.insecurePermissions`), and a regular file (else a
    /// plain read failure, `.ioFailure`: only a trusted user could have put it there).
    public static func checkOpenFile(_ fd: Int32, path: String, what: String) throws(SwitchbackError) -> stat {
        var info = stat()
        if fstat(fd, &info) != 0 { throw .system("Inspecting", path: path, errno: errno) }
        try checkOwnerAndMode(info, path: path, what: what)
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .system("Reading", path: path, errno: info.st_mode & S_IFMT == S_IFDIR ? EISDIR : EINVAL)
        }
        return info
    }

    /// Opens `path` read-only without following a link as its last component
    /// (`O_NOFOLLOW`); a link is refused with a sentence. Nil when it does not exist.
    static func openNoFollow(_ path: String, what: String, flags: Int32 = O_RDONLY, mode: mode_t = 0) throws(SwitchbackError) -> Int32? {
        let (fd, openError) = retryingInterrupts { open(path, flags | O_CLOEXEC | O_NOFOLLOW, mode) }
        if fd >= 0 { return fd }
        if openError == ENOENT || openError == ENOTDIR { return nil }
        if openError == ELOOP {
            throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is a symbolic link; refusing to follow it: replace it with a regular file (or remove it).", path: path, errno: openError)
        }
        throw .system("Opening", path: path, errno: openError)
    }

    /// `lstat(2)`; nil when the path does not exist.
    static func linkStatus(_ path: String) throws(SwitchbackError) -> stat? {
        var info = stat()
        if lstat(path, &info) != 0 {
            let error = errno
            if error == ENOENT || error == ENOTDIR { return nil }
            throw .system("Inspecting", path: path, errno: error)
        }
        return info
    }

    static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func components(_ path: String) -> [Substring] {
        path.utf8.split(separator: 0x2F, omittingEmptySubsequences: true).map { Substring($0) }
    }
}
