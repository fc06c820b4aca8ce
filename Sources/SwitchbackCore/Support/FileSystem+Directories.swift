#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

extension StrictModes {
    /// `StrictModes`' rule as the file layer's policy: owned by this user or root, writable
    /// by no one else (or only by this process's private group), a sticky ancestor accepted;
    /// the sentences are those of `checkOwnerAndMode`.
    public static let trustPolicy = TrustPolicy { info, path, role, what in
        let name: String
        switch role {
        case .ancestor: name = "directory above the \(what)"
        case .directory, .file: name = what
        case .link:
            let me = geteuid()
            if info.st_uid == 0 || info.st_uid == me { return nil }
            return "The symbolic link \(path) on the way to the \(what) is owned by another user (owner uid \(info.st_uid)); refusing to follow it: remove it or run 'chown -h \(me) \(path)'."
        }
        do throws(SwitchbackError) {
            try checkOwnerAndMode(info, path: path, what: name, sticky: role == .ancestor, isFile: role == .file)
            return nil
        } catch {
            return error.message
        }
    }
}

extension SwitchbackError {
    /// The file layer's refusal (`.insecurePermissions`, its sentence kept) or failed call.
    init(_ error: FileError) {
        switch error.code {
        case .untrusted:
            self.init(.insecurePermissions, error.message, path: error.path, errno: error.errno)
        case .system:
            let code: Code
            switch error.errno ?? 0 {
            case ENOENT: code = .fileNotFound
            case EACCES, EPERM: code = .permissionDenied
            default: code = .ioFailure
            }
            self.init(code, error.message, path: error.path, errno: error.errno)
        }
    }
}

extension FileSystem {
    /// Opens and checks the directory at `path` (`CheckedDirectory.open` with StrictModes'
    /// rule): every writer of SwitchbackCore creates, replaces and removes files only
    /// relative to the descriptor this returns. With `creating`, missing directories are made
    /// (mode 0700) inside directories that passed, and checked after.
    public static func directory(_ path: String, what: String = "directory", creating: Bool = false) throws(SwitchbackError) -> CheckedDirectory {
        do {
            return try CheckedDirectory.open(path, what: what, creating: creating ? 0o700 : nil, policy: StrictModes.trustPolicy)
        } catch {
            throw SwitchbackError(error)
        }
    }

    /// Removes the file at `path` with `unlinkat` relative to its checked directory (a link
    /// there is removed, never followed); a missing file is fine.
    public static func remove(_ path: String) throws(SwitchbackError) {
        let (parent, name) = split(path)
        let directory = try directory(parent)
        try layer { () throws(FileError) in try directory.remove(name) }
    }

    /// Renames `path` to `newName` in the same checked directory (`renameat`).
    public static func rename(_ path: String, toName newName: String) throws(SwitchbackError) {
        let (parent, name) = split(path)
        let directory = try directory(parent)
        try layer { () throws(FileError) in try directory.rename(name, to: newName) }
    }

    /// Runs a file-layer operation, its failure as a `SwitchbackError`.
    @inline(__always)
    static func layer<T>(_ body: () throws(FileError) -> T) throws(SwitchbackError) -> T {
        do { return try body() } catch { throw SwitchbackError(error) }
    }

    /// The directory and the last component of `path`.
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: 0x2F) else { return (".", path) }
        let parent = String(Substring(path.utf8[..<slash]))
        return (parent.isEmpty ? "/" : parent, String(Substring(path.utf8[path.utf8.index(after: slash)...])))
    }
}
