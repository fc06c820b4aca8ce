#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

/// The checks, modelled on sshd's StrictModes, that every file the launcher trusts must
/// pass: the bundle, its manifest, the slots and the libraries they need, the state
/// directory and each file in it.
///
/// - A trusted file or directory is owned by the effective user or root and is not writable
///   by others; writable by its group only when that group is this process's own private
///   group (its effective group, which no other account has: `checkSharedWrite`).
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
    /// and not writable by others, nor by its group unless that is this process's private
    /// group; `sticky` accepts a world-writable sticky directory (an ancestor). `what` names
    /// the file in the sentence ("state directory").
    ///
    /// With `isFile` (a file Switchback reads or writes: the state directory's `state`,
    /// `health`, `switch.request`, `analysis.override`, `lock`, the manifest) group write is
    /// never trusted, private group or not: a group can have members no file lists (a
    /// supplementary group: Kubernetes' `fsGroup` and `supplementalGroups`, `docker run
    /// --group-add`, systemd's `SupplementaryGroups=`), and a file's content is what it
    /// decides. A start takes group write off its own state files first
    /// (`StateDirectory.tighten`), so the kubelet's pass does not leave them untrusted.
    public static func checkOwnerAndMode(_ info: stat, path: String, what: @autoclosure () -> String, sticky: Bool = false,
                                         isFile: Bool = false) throws(SwitchbackError) {
        let mode = info.st_mode & 0o7777
        // Built only on refusal: this runs some 40 times per start.
        func found() -> String { "owner uid \(info.st_uid), mode \(String(mode, radix: 8))" }
        if info.st_uid != 0 && info.st_uid != geteuid() {
            let me = geteuid()
            throw SwitchbackError(.insecurePermissions, "The \(what()) \(path) is owned by another user (\(found())); refusing to trust it: run 'chown \(me) \(path)' or remove it.", path: path)
        }
        if mode & FileMode.sharedWrite != 0 && !(sticky && mode & FileMode.sticky != 0) {
            if isFile && mode & FileMode.worldWrite == 0 { try checkGroupWrittenFile(info, path: path, what: what()) }
            try checkSharedWrite(info, path: path, what: what(), user: geteuid(), group: getegid()) { () throws(FileError) in try LocalAccounts.system() }
        }
    }

    /// The slow path of `checkOwnerAndMode`, for a file or directory writable by more than its
    /// owner (and not a sticky ancestor): throws unless only its group may write it and that
    /// group is the private group of `user` running as `group` (`LocalAccounts.whyNotPrivate`,
    /// the one reader of /etc/passwd and /etc/group, which `TrustPolicy.strict` asks too), the
    /// rule Debian's OpenSSH applies to StrictModes ("user-group-modes"). That is what a
    /// Kubernetes volume with `fsGroup` equal to the pod's `runAsGroup` looks like after the
    /// kubelet's ownership pass (g+rw, directories g+rwxs). `accounts` is read only here.
    @inline(never)
    static func checkSharedWrite(_ info: stat, path: String, what: String, user: uid_t, group: gid_t,
                                 accounts: () throws(FileError) -> LocalAccounts) throws(SwitchbackError) {
        let mode = info.st_mode & 0o7777
        // On a read-only mount no one writes, whatever the mode says; only root could mount it
        // again writable. A Kubernetes ConfigMap volume is such a mount (a directive file,
        // docs/remote.md), and its directory may well be 0777.
        if isOnReadOnlyMount(path) { return }
        if mode & FileMode.worldWrite != 0 {
            throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is writable by other users (owner uid \(info.st_uid), mode \(String(mode, radix: 8))); refusing to trust it: run 'chmod go-w \(path)'.", path: path)
        }
        let why: String
        do {
            guard let reason = try accounts().whyNotPrivate(info.st_gid, user: user, effectiveGroup: group) else { return }
            why = reason
        } catch {
            why = "whether other accounts share group \(info.st_gid) is unknown (\(error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message))"
        }
        let found = "owner uid \(info.st_uid), group \(info.st_gid), mode \(String(mode, radix: 8))"
        let alternative = info.st_gid == group
            ? ", or give group \(info.st_gid) to this user alone"
            : ", or run this program with group \(info.st_gid) as its group (in Kubernetes: runAsGroup equal to fsGroup)"
        throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is writable by its group (\(found)), and \(why); refusing to trust it: run 'chmod g-w \(path)'\(alternative).", path: path)
    }

    /// The slow path of `checkOwnerAndMode(isFile: true)` for a file its group may write:
    /// trusted only on a read-only mount (nobody writes there), else refused with a sentence.
    @inline(never)
    static func checkGroupWrittenFile(_ info: stat, path: String, what: String) throws(SwitchbackError) {
        if isOnReadOnlyMount(path) { return }
        let mode = info.st_mode & 0o7777
        throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is writable by its group (owner uid \(info.st_uid), group \(info.st_gid), mode \(String(mode, radix: 8))), whose members no file lists (a supplementary group such as Kubernetes' fsGroup); refusing to trust it: run 'chmod g-w \(path)' once you have checked what it holds (each start of the launcher does so for the files of its own state directory).", path: path)
    }

    /// Whether `path` is on a file system mounted read-only (`statvfs(3)`'s `ST_RDONLY`).
    static func isOnReadOnlyMount(_ path: String) -> Bool {
        var info = statvfs()
        return statvfs(path, &info) == 0 && info.f_flag & UInt(ST_RDONLY) != 0
    }

    /// Walks `path` (absolute) from `/` and returns it with every symbolic link resolved.
    /// Each directory on the way and each link passes the ownership and mode check (an
    /// ancestor may be sticky and world-writable, the directory holding the last component
    /// may not); the last component itself is only resolved — callers open it with
    /// `O_NOFOLLOW` and check the descriptor. With `followLast: false` a link as the last
    /// component is refused. Returns nil when a component does not exist.
    ///
    /// One `lstat` per component: the status that showed a component to be a directory is
    /// the one its check reads when the walk descends into it. Within a start
    /// (`rememberingTrustedDirectories`), a directory that passed is not walked again.
    public static func resolve(_ path: String, what: String, followLast: Bool = true, strictHolder: Bool = true) throws(SwitchbackError) -> String? {
        var status = stat(), known = false
        return try walk(path, what: what, followLast: followLast, strictHolder: strictHolder, status: &status, known: &known)
    }

    /// `resolve`, setting `status` to the `lstat` of the resolved path and `known` to true
    /// when the walk made one. (No tuple or optional of `stat` in the result: each new
    /// generic type costs its runtime metadata at every start.)
    static func walk(_ path: String, what: String, followLast: Bool, strictHolder: Bool,
                     status: inout stat, known: inout Bool) throws(SwitchbackError) -> String? {
        guard path.utf8.first == 0x2F else {
            throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is a relative path; refusing to trust it: give an absolute path.", path: path)
        }
        var pending = components(path)
        pending.reverse()  // in place: a reversed copy grew a second array one append at a time
        var resolved = ""
        var resolvedInfo = stat()  // the lstat of `resolved`, a real directory, when `haveInfo`
        var haveInfo = false
        var links = 0
        var checked: (directory: String, strictly: Bool)?  // the directory most recently checked
        while let component = pending.popLast() {
            if component == "." { continue }
            if component == ".." {
                resolved = FileSystem.parentDirectory(of: resolved.isEmpty ? "/" : resolved)
                if resolved == "/" { resolved = "" }
                haveInfo = false
                continue
            }
            let directory = resolved.isEmpty ? "/" : resolved
            // With no component left after this one, `directory` holds the last one: no
            // sticky exception there (unless the caller checks that directory itself).
            let strictly = pending.isEmpty && strictHolder
            if checked?.directory != directory || (strictly && checked?.strictly == false) {
                if !TrustedDirectories.contains(directory, strictly: strictly) {
                    var info = resolvedInfo
                    if !haveInfo {
                        guard let found = try linkStatus(directory) else { return nil }
                        info = found
                    }
                    try checkOwnerAndMode(info, path: directory, what: pending.isEmpty ? "directory of the \(what)" : "directory above the \(what)",
                                          sticky: !strictly)
                    TrustedDirectories.insert(directory, strictly: strictly || info.st_mode & FileMode.sharedWrite == 0)
                }
                checked = (directory, strictly)
            }
            var candidate = resolved
            candidate += "/"
            candidate += component
            // A directory checked earlier in this start is a real directory: no lstat.
            if !pending.isEmpty && TrustedDirectories.contains(candidate, strictly: false) {
                resolved = candidate
                haveInfo = false
                continue
            }
            guard let info = try linkStatus(candidate) else { return nil }
            if FileMode.type(info) == FileMode.symbolicLink {
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
                if target.utf8.first == 0x2F {
                    resolved = ""
                    haveInfo = false
                }
                pending.append(contentsOf: components(target).reversed())
                continue
            }
            if !pending.isEmpty && FileMode.type(info) != FileMode.directory { return nil }
            resolved = candidate
            resolvedInfo = info
            haveInfo = true
        }
        if resolved.isEmpty { return "/" }
        status = resolvedInfo
        known = haveInfo
        return resolved
    }

    /// Checks the directory at `path`, the top of a trusted tree (the bundle root, the state
    /// directory): not a link, owned by this user or root, writable by no one else (`checkOwnerAndMode`);
    /// its ancestors are walked as `resolve` does, a sticky one accepted. Returns false when
    /// it does not exist.
    @discardableResult
    public static func checkDirectory(_ path: String, what: String) throws(SwitchbackError) -> Bool {
        try resolveDirectory(path, what: what, followLast: false) != nil
    }

    /// `checkDirectory`, for a directory that may itself be reached through links (the
    /// directory of a library, /lib → usr/lib): returns it resolved, or nil when missing.
    static func resolveDirectory(_ path: String, what: String, followLast: Bool = true) throws(SwitchbackError) -> String? {
        var info = stat(), known = false
        guard let resolved = try walk(path, what: what, followLast: followLast, strictHolder: false, status: &info, known: &known) else { return nil }
        if TrustedDirectories.contains(resolved, strictly: true) { return resolved }
        if !known {
            guard let found = try linkStatus(resolved) else { return nil }
            info = found
        }
        guard FileMode.type(info) == FileMode.directory else {
            throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is not a directory; refusing to use it: remove it or choose another path.", path: path)
        }
        try checkOwnerAndMode(info, path: resolved, what: what)
        TrustedDirectories.insert(resolved, strictly: true)
        return resolved
    }

    /// `fstat(2)` of an open descriptor, then the strict check: owned by this user or root,
    /// writable by no one else (`checkOwnerAndMode`, `.insecurePermissions`), and a regular file (else a
    /// plain read failure, `.ioFailure`: only a trusted user could have put it there).
    public static func checkOpenFile(_ fd: Int32, path: String, what: String) throws(SwitchbackError) -> stat {
        var info = stat()
        if fstat(fd, &info) != 0 { throw .system("Inspecting", path: path, errno: errno) }
        try checkOwnerAndMode(info, path: path, what: what, isFile: true)
        guard FileMode.type(info) == FileMode.regular else {
            throw .system("Reading", path: path, errno: FileMode.type(info) == FileMode.directory ? EISDIR : EINVAL)
        }
        return info
    }

    /// Opens `path` read-only without following a link as its last component
    /// (`O_NOFOLLOW`); a link is refused with a sentence. Nil when it does not exist.
    package static func openNoFollow(_ path: String, what: String, flags: Int32 = O_RDONLY, mode: mode_t = 0) throws(SwitchbackError) -> Int32? {
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

    /// The non-empty components of `path`.
    static func components(_ path: String) -> [String] { path.nonEmptyFields(separatedBy: 0x2F) }
}

extension String {
    /// The non-empty runs of bytes between `separator`s, as Strings (most fit inline, without
    /// allocating): a generic split and Substring appends cost the launcher's start more than
    /// the system calls of its walks.
    func nonEmptyFields(separatedBy separator: UInt8) -> [String] {
        var result: [String] = []
        var text = self
        text.withUTF8 { bytes in
            // Room for 16 at once: growing an array of Strings one append at a time
            // reallocated and copied it at 1, 2, 4, 8 and 16 (a slot's 15 libraries), and
            // counting the separators first cost as much again.
            result.reserveCapacity(16)
            var start = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == separator {
                if index > start { result.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)) }
                start = index + 1
            }
        }
        return result
    }
}

/// The directories a start has already checked, so that the walks to the bundle, the
/// manifest, the slot and the state directory do not `lstat` the same ancestors again (a
/// steady-state start walked /, each directory above the bundle and the bundle itself three
/// times). Off unless `StrictModes.rememberingTrustedDirectories` turned it on: only the
/// launcher does, for its single-threaded start, and forgets before the app or the
/// supervisor runs. Remembering is safe for that long: a directory owned by this user or
/// root and writable by no one else can only be changed — its mode, its owner, the entries
/// the walk went through — by this user or root, whom the checks trust anyway.
enum TrustedDirectories {
    /// The checked directories (resolved: real directories, not links) that passed the strict
    /// check, and those that passed only as ancestors (a sticky world-writable one, /tmp).
    /// Two arrays of String, not one of tuples: a new generic type costs its metadata at
    /// every start, more than the lookups.
    nonisolated(unsafe) static var strict: [String]?
    nonisolated(unsafe) static var lenient: [String] = []

    static func contains(_ path: String, strictly: Bool) -> Bool {
        guard let strict else { return false }
        // Lengths first (O(1) for native strings): the remembered paths share long prefixes,
        // and each walk asks for every component.
        let length = path.utf8.count
        func listed(_ paths: [String]) -> Bool { paths.contains { $0.utf8.count == length && $0 == path } }
        return listed(strict) || (!strictly && listed(lenient))
    }

    static func insert(_ path: String, strictly: Bool) {
        guard strict != nil, !contains(path, strictly: strictly) else { return }
        if strictly { strict!.append(path) } else { lenient.append(path) }
    }
}

extension StrictModes {
    /// From here the walks remember the directories they checked (see `TrustedDirectories`).
    /// Not for concurrent use: the launcher's single-threaded start only.
    static func rememberTrustedDirectories() {
        TrustedDirectories.strict = []
        TrustedDirectories.lenient = []
    }

    /// Forgets them: every later walk checks every directory again.
    static func forgetTrustedDirectories() {
        TrustedDirectories.strict = nil
        TrustedDirectories.lenient = []
    }
}

/// The type and permission bits of `st_mode`, as numbers (POSIX fixes them, Linux's
/// <sys/stat.h> spells them so). Glibc's Swift overlay exports S_IFMT, S_IFDIR and the rest
/// as functions, its C macros not importing: each a call into another library that the
/// dynamic linker binds at its first use, seven of the launcher's start-up bindings.
enum FileMode {
    static let typeMask: mode_t = 0o170_000
    static let regular: mode_t = 0o100_000
    static let directory: mode_t = 0o040_000
    static let symbolicLink: mode_t = 0o120_000
    /// Writable by the group or by others.
    static let sharedWrite: mode_t = 0o022
    /// Writable by others.
    static let worldWrite: mode_t = 0o002
    static let sticky: mode_t = 0o1_000

    /// The file type of `info`: compare with `regular`, `directory`, `symbolicLink`.
    static func type(_ info: stat) -> mode_t { info.st_mode & typeMask }
}
