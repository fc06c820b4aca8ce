#if canImport(Glibc)
import Glibc
#endif

/// The local accounts database, `/etc/passwd` and `/etc/group`, as the private-group rule
/// reads it (Debian OpenSSH's "user-group-modes"): a directory writable by its group is
/// trusted only when that group is this process's effective group, no other account has it
/// as its primary group, and /etc/group lists no other member. That is a Kubernetes volume
/// with `fsGroup` equal to the pod's `runAsGroup`.
///
/// The one reader of the two files: `TrustPolicy.strict` here and SwitchbackCore's
/// `StrictModes` both ask it, so a directory gets one verdict whichever layer checks it.
/// Parsed rather than asked through NSS (`getpwent`, `getgrgid_r`): glibc loads its NSS
/// modules with `dlopen`, which searches `LD_LIBRARY_PATH`, and the launcher loads no library
/// it did not name by path. Accounts that only a directory service (LDAP, sssd) knows are
/// therefore not seen; docs/design.md ("State on shared volumes") says so. Read only when a
/// directory is group-writable.
public struct LocalAccounts: Sendable, Equatable {
    /// One line of /etc/passwd: its name, uid and primary group.
    public struct Account: Sendable, Equatable {
        public var name: String
        public var uid: uid_t
        public var gid: gid_t

        public init(name: String, uid: uid_t, gid: gid_t) {
            self.name = name
            self.uid = uid
            self.gid = gid
        }
    }

    /// One line of /etc/group: its gid and the names it lists as members.
    public struct Group: Sendable, Equatable {
        public var gid: gid_t
        public var members: [String]
    }

    public var accounts: [Account]
    public var groups: [Group]

    /// Parses the two files' text. Lines that are not `name:x:uid:gid:...` (comments, NIS
    /// `+` entries, garbage) are skipped: they name no account this rule could check.
    public static func parse(passwd: [UInt8], group: [UInt8]) -> LocalAccounts {
        var accounts: [Account] = []
        for line in lines(passwd) {
            let fields = fields(line)
            guard fields.count >= 4, !fields[0].isEmpty, let uid = uid_t(fields[2]), let gid = gid_t(fields[3]) else { continue }
            accounts.append(Account(name: fields[0], uid: uid, gid: gid))
        }
        var groups: [Group] = []
        for line in lines(group) {
            let fields = fields(line)
            guard fields.count >= 3, let gid = gid_t(fields[2]) else { continue }
            let members = fields.count > 3 ? fields[3].split(separator: ",").map(String.init) : []
            groups.append(Group(gid: gid, members: members))
        }
        return LocalAccounts(accounts: accounts, groups: groups)
    }

    /// Reads /etc/passwd and /etc/group. A missing file holds no accounts (a container image
    /// without one, run as a numeric `runAsUser`); one that exists but cannot be read throws,
    /// so that the rule refuses rather than guesses.
    public static func system(passwdPath: String = "/etc/passwd", groupPath: String = "/etc/group") throws(FileError) -> LocalAccounts {
        parse(passwd: try read(passwdPath), group: try read(groupPath))
    }

    /// Why `gid` is not the private group of the user `uid` whose effective group is
    /// `effectiveGroup`, as a clause; nil when it is: it is that effective group, no other
    /// account (another uid) has it as its primary group, and /etc/group lists no member of it
    /// other than this user's own name.
    public func whyNotPrivate(_ gid: gid_t, user uid: uid_t, effectiveGroup: gid_t) -> String? {
        guard gid == effectiveGroup else { return Self.notEffective(gid, effectiveGroup) }
        if let other = accounts.first(where: { $0.gid == gid && $0.uid != uid }) {
            return "the account \(other.name) (uid \(other.uid)) also has group \(gid) as its primary group"
        }
        let names = accounts.filter { $0.uid == uid }.map(\.name)
        for group in groups where group.gid == gid {
            if let other = group.members.first(where: { !names.contains($0) }) {
                return "/etc/group lists \(other) as a member of group \(gid)"
            }
        }
        return nil
    }

    /// The same, reading the files only when `gid` is the effective group; files that cannot
    /// be read give the clause that says so (the rule then refuses).
    public static func whyNotPrivate(_ gid: gid_t, user uid: uid_t, effectiveGroup: gid_t,
                                     passwdPath: String = "/etc/passwd", groupPath: String = "/etc/group") -> String? {
        guard gid == effectiveGroup else { return notEffective(gid, effectiveGroup) }
        do {
            return try system(passwdPath: passwdPath, groupPath: groupPath).whyNotPrivate(gid, user: uid, effectiveGroup: effectiveGroup)
        } catch {
            let clause = error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message
            return "whether other accounts share group \(gid) is unknown (\(clause))"
        }
    }

    static func notEffective(_ gid: gid_t, _ effectiveGroup: gid_t) -> String {
        "group \(gid) is not this process's group (\(effectiveGroup))"
    }

    static func read(_ path: String) throws(FileError) -> [UInt8] {
        let (fd, openError) = CheckedDirectory.retrying { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        if fd < 0 {
            if openError == ENOENT { return [] }
            throw .system("Reading", path: path, errno: openError)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let (count, readError) = CheckedDirectory.retrying { chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
            if count < 0 { throw .system("Reading", path: path, errno: readError) }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > 64 << 20 { throw FileError(.system, "\(path) is larger than 64 MiB; it is not an accounts file.", path: path) }
        }
    }

    private static func lines(_ bytes: [UInt8]) -> [String] {
        String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// The colon-separated fields of a line, empty ones kept, carriage returns dropped.
    private static func fields(_ line: String) -> [String] {
        line.split(separator: ":", omittingEmptySubsequences: false).map { $0.filter { $0 != "\r" } }
    }
}
