#if canImport(Glibc)
import Glibc
#endif

/// Reads a file that an operator's command acts on as given, such as the private key that
/// `rollbackctl sign` signs with or the directive that `sign --renew` re-signs: the command
/// may run as root, so another user must not be able to put a file of theirs in its place.
///
/// The same checks as a slot's (`StrictModes`): every directory and symbolic link on the way
/// owned by this user or root and writable by no one else (a sticky world-writable ancestor
/// such as /tmp accepted, the directory that holds the file not), the file opened with
/// `O_NOFOLLOW` and checked through its descriptor with `fstat` (a regular file, owned by this
/// user or root, writable by no one else), and read from that same descriptor.
public enum TrustedFile {
    /// The bytes of the file at `path` (relative to the working directory, or absolute).
    /// Returns nil when it does not exist. Throws `.insecurePermissions` with one sentence
    /// naming the file (as `what`, "private key") and why, or the failure of a system call.
    public static func read(_ path: String, what: String, limit: Int = 1 << 20) throws(SwitchbackError) -> [UInt8]? {
        var info = stat()
        return try read(path, what: what, limit: limit, status: &info)
    }

    /// `read`, setting `status` to the `fstat` of the descriptor read (the version read).
    public static func read(_ path: String, what: String, limit: Int, status info: inout stat) throws(SwitchbackError) -> [UInt8]? {
        let absolute = path.utf8.first == 0x2F ? path : workingDirectory() + "/" + path
        guard let resolved = try StrictModes.resolve(absolute, what: what),
              let fd = try StrictModes.openNoFollow(resolved, what: what, flags: O_RDONLY | O_NONBLOCK) else { return nil }
        defer { close(fd) }
        if fstat(fd, &info) != 0 { throw .system("Inspecting", path: resolved, errno: errno) }
        guard FileMode.type(info) == FileMode.regular else {
            throw SwitchbackError(.insecurePermissions, "The \(what) \(resolved) is not a regular file; refusing to read it: give a regular file.", path: resolved)
        }
        try StrictModes.checkOwnerAndMode(info, path: resolved, what: what)
        return try FileSystem.readToEnd(fd, path: resolved, limit: limit, regularFileSize: Int(info.st_size))
    }

    /// `getcwd(3)`, or "." when it fails (then the walk refuses the relative path).
    private static func workingDirectory() -> String {
        guard let buffer = getcwd(nil, 0) else { return "." }
        defer { free(buffer) }
        return String(cString: buffer)
    }
}
