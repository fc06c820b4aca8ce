#if canImport(Glibc)
import Glibc
#endif

/// What a directory, a directory above it, a link on the way or a file in it must be for
/// Switchback to write there. `strict` (the default): owned by this user or root and
/// writable by no one else (its group only when that is this process's private group, as
/// in StrictModes); a directory above may be writable by others when it is sticky
/// (like /tmp), since nobody else can then rename or remove the entries below it.
/// SwitchbackCore passes its own `StrictModes` rule, which also accepts a private group.
public struct TrustPolicy: Sendable {
    /// What is being checked.
    public enum Role: Sendable, Equatable {
        /// A directory on the way to the one written in (a sticky one may be world-writable).
        case ancestor
        /// The directory written in.
        case directory
        /// A file opened in it (a lock file, an appended log).
        case file
        /// A symbolic link followed on the way (only its owner matters).
        case link
    }

    /// Returns nil when `info` (of `path`, the `role` of something named `what`) may be
    /// trusted, else the sentence that says why not and what to do. Every policy accepts a
    /// directory owned by this user or root that neither group nor others may write:
    /// `CheckedDirectory` decides that case without asking (nor building the path).
    public let refusal: @Sendable (_ info: stat, _ path: String, _ role: Role, _ what: String) -> String?

    public init(_ refusal: @escaping @Sendable (_ info: stat, _ path: String, _ role: Role, _ what: String) -> String?) {
        self.refusal = refusal
    }

    /// Owned by this user or root, not writable by others (a sticky ancestor may be), nor by
    /// its group unless that is this process's private group (`LocalAccounts`).
    public static let strict = TrustPolicy { info, path, role, what in
        let me = geteuid()
        let mode = info.st_mode & 0o7777
        // Built only on refusal: this runs for every directory of every walk.
        func found() -> String { "owner uid \(info.st_uid), mode \(String(mode, radix: 8))" }
        if info.st_uid != 0 && info.st_uid != me {
            if role == .link {
                return "The symbolic link \(path) on the way to the \(what) is owned by another user (owner uid \(info.st_uid)); refusing to follow it: remove it or run 'chown -h \(me) \(path)'."
            }
            return "The \(FileMode.name(role, what)) \(path) is owned by another user (\(found())); refusing to write there: run 'chown \(me) \(path)' or choose another directory."
        }
        if role == .link { return nil }
        if mode & 0o022 == 0 || (role == .ancestor && mode & 0o1000 != 0) { return nil }
        if mode & 0o002 != 0 {
            return "The \(FileMode.name(role, what)) \(path) is writable by other users (\(found())); refusing to write there: run 'chmod go-w \(path)'."
        }
        // Writable by its group: trusted only when that is this process's private group.
        let group = getegid()
        guard let why = LocalAccounts.whyNotPrivate(info.st_gid, user: me, effectiveGroup: group) else { return nil }
        let alternative = info.st_gid == group
            ? ", or give group \(info.st_gid) to this user alone"
            : ", or run this program with group \(info.st_gid) as its group (in Kubernetes: runAsGroup equal to fsGroup)"
        return "The \(FileMode.name(role, what)) \(path) is writable by its group (owner uid \(info.st_uid), group \(info.st_gid), mode \(String(mode, radix: 8))), and \(why); refusing to write there: run 'chmod g-w \(path)'\(alternative)."
    }

    /// `strict`, except that the directory written in may be sticky and world-writable
    /// (/tmp, /dev/shm), as an ancestor may: for what a caller keeps *beside* a directory it
    /// was given (a data directory's lock, its snapshots). Nobody else can rename or remove
    /// entries there, a link is never followed (`O_NOFOLLOW`), and a file or directory
    /// someone else made first is theirs, so refused.
    public static let stickyHolder = TrustPolicy { info, path, role, what in
        strict.refusal(info, path, role == .directory ? .ancestor : role, what)
    }
}

/// The type bits of `st_mode`, as numbers (Glibc's overlay offers S_IFMT only as functions).
enum FileMode {
    static let typeMask: mode_t = 0o170_000
    static let regular: mode_t = 0o100_000
    static let directory: mode_t = 0o040_000
    static let symbolicLink: mode_t = 0o120_000

    static func type(_ info: stat) -> mode_t { info.st_mode & typeMask }

    /// "directory above the state directory", "state directory", "file in the state directory".
    static func name(_ role: TrustPolicy.Role, _ what: String) -> String {
        switch role {
        case .ancestor: "directory above the \(what)"
        case .directory, .link: what
        case .file: "file in the \(what)"
        }
    }
}
