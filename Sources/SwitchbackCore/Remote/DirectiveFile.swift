#if canImport(Glibc)
import Glibc
#endif

/// A directive read from a local file (`remote.url=file:///etc/app/directive.json`): a
/// Kubernetes ConfigMap volume, or a file that configuration management writes.
///
/// What changes is only the fetch: `rollbackctl sync` reads the file strictly (`read`, the
/// checks of any file Switchback trusts, links followed one at a time as the kubelet lays
/// them out) and judges the bytes with the same evaluator as an HTTP answer. A start and the
/// supervisor decide whether to read it at all with one `stat(2)` of the file, compared with
/// the version the last sync judged (`seen`), kept in the state directory as the target of
/// the symbolic link `remote.file` (one `readlink(2)`; a new file, no existing format changes).
public enum DirectiveFile {
    /// The path of a `file://` URL (`file:///etc/app/directive.json` → `/etc/app/directive.json`),
    /// nil for any other URL. `file://localhost/...` is the same file; another host is not a path.
    public static func path(ofURL url: String) -> String? {
        guard url.utf8.count > 7, url.hasPrefix("file://") else { return nil }
        var rest = url.dropFirst(7)
        if rest.hasPrefix("localhost/") { rest = rest.dropFirst(9) }
        guard rest.utf8.first == 0x2F else { return nil }
        return String(rest)
    }

    /// The record's name in the state directory.
    public static func recordPath(in directory: StateDirectory) -> String { directory.path + "/remote.file" }

    /// The version of the file at `path`, following its links (one `stat(2)`), as judged for
    /// the current build `currentVersion`: "missing" when it does not exist, "error N" when
    /// it cannot be examined.
    public static func fingerprint(of path: String, for currentVersion: String) -> String {
        var info = stat()
        if stat(path, &info) != 0 {
            let error = errno
            return (error == ENOENT || error == ENOTDIR ? "missing" : "error \(error)") + " for " + currentVersion
        }
        return fingerprint(info, for: currentVersion)
    }

    /// The version `info` (of an opened file) stands for: device, inode, size, and the
    /// modification and change times to the nanosecond (the kubelet's update makes a new
    /// inode; a rewrite in place moves the times), and the current build's version it was
    /// judged for (after an upgrade the same file is judged again, as over HTTP).
    public static func fingerprint(_ info: stat, for currentVersion: String) -> String {
        "v1 \(info.st_dev) \(info.st_ino) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(info.st_ctim.tv_sec).\(info.st_ctim.tv_nsec) for \(currentVersion)"
    }

    /// The version the last sync judged, nil when none did: one `readlink(2)`.
    public static func seen(in directory: StateDirectory) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink(recordPath(in: directory), &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether the file differs from the version the last sync judged (or none did).
    public static func hasChanged(_ path: String, for currentVersion: String, in directory: StateDirectory) -> Bool {
        fingerprint(of: path, for: currentVersion) != seen(in: directory)
    }

    /// Records `fingerprint` as the version judged: a link `remote.file.tmp-PID` made in the
    /// checked state directory, renamed over `remote.file` (readers see the old or the new).
    /// Called by `sync` once the outcome is recorded.
    public static func recordSeen(_ fingerprint: String, in directory: StateDirectory) throws(SwitchbackError) {
        let (parent, name) = FileSystem.split(recordPath(in: directory))
        let opened = try FileSystem.directory(parent, what: "state directory", creating: true)
        let temporary = "\(name).tmp-\(getpid())"
        _ = unlinkat(opened.descriptor, temporary, 0)
        if symlinkat(fingerprint, opened.descriptor, temporary) != 0 {
            throw .system("Writing", path: opened.child(temporary), errno: errno)
        }
        if renameat(opened.descriptor, temporary, opened.descriptor, name) != 0 {
            let error = errno
            _ = unlinkat(opened.descriptor, temporary, 0)
            throw .system("Writing", path: opened.child(name), errno: error)
        }
    }

    /// Reads the directive file at `path` with the checks of any file Switchback trusts
    /// (`TrustedFile`): every directory on the way owned by this user or root and writable by
    /// no one else (a sticky ancestor such as /tmp accepted, the directory holding the file
    /// not), each symbolic link (`directive.json` → `..data/directive.json`, `..data` →
    /// `..2026_11_26_04_00_00.123456789`) owned by this user or root and followed one at a
    /// time, the file opened with `O_NOFOLLOW` and checked through its descriptor. Returns the
    /// bytes and the version read (`fingerprint` of that descriptor), nil when it does not exist.
    public static func read(_ path: String, for currentVersion: String, limit: Int) throws(SwitchbackError) -> (bytes: [UInt8], fingerprint: String)? {
        var info = stat()
        guard let bytes = try TrustedFile.read(path, what: "directive file", limit: limit, status: &info) else { return nil }
        return (bytes, fingerprint(info, for: currentVersion))
    }
}
