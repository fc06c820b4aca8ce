#if canImport(Glibc)
import Glibc
#endif

/// The local accounts database, `/etc/passwd` and `/etc/group`, as the private-group rule of
/// `StrictModes` reads it: which accounts have a group as their primary group, and which
/// names a group lists as members.
///
/// Parsed here rather than asked through NSS (`getpwent`, `getgrgid_r`): glibc loads its NSS
/// modules with `dlopen`, which searches `LD_LIBRARY_PATH`, and the launcher loads no library
/// it did not name by path. Accounts that only a directory service (LDAP, sssd) knows are
/// therefore not seen; docs/design.md ("State on shared volumes") says so.
struct Accounts: Sendable, Equatable {
    /// One line of /etc/passwd: its name, uid and primary group.
    struct Account: Sendable, Equatable {
        var name: String
        var uid: uid_t
        var gid: gid_t
    }

    /// One line of /etc/group: its gid and the names it lists as members.
    struct Group: Sendable, Equatable {
        var gid: gid_t
        var members: [String]
    }

    var accounts: [Account]
    var groups: [Group]

    /// Parses the two files' text. Lines that are not `name:x:uid:gid:...` (comments, NIS
    /// `+` entries, garbage) are skipped: they name no account this rule could check.
    static func parse(passwd: [UInt8], group: [UInt8]) -> Accounts {
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
            let members = fields.count > 3 ? fields[3].nonEmptyFields(separatedBy: 0x2C /* , */) : []
            groups.append(Group(gid: gid, members: members))
        }
        return Accounts(accounts: accounts, groups: groups)
    }

    /// Reads /etc/passwd and /etc/group. A missing file holds no accounts (a container image
    /// without one, run as a numeric `runAsUser`); one that exists but cannot be read throws,
    /// so that the rule refuses rather than guesses.
    static func system(passwdPath: String = "/etc/passwd", groupPath: String = "/etc/group") throws(SwitchbackError) -> Accounts {
        func read(_ path: String) throws(SwitchbackError) -> [UInt8] {
            let (fd, openError) = retryingInterrupts { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
            if fd < 0 {
                if openError == ENOENT { return [] }
                throw .system("Reading", path: path, errno: openError)
            }
            defer { close(fd) }
            return try FileSystem.readToEnd(fd, path: path, limit: 64 << 20)
        }
        return parse(passwd: try read(passwdPath), group: try read(groupPath))
    }

    /// Why `gid` is not the private group of the user `uid` whose effective group is
    /// `effectiveGroup`, as a clause; nil when it is: it is that effective group, no other
    /// account (another uid) has it as its primary group, and /etc/group lists no member of it
    /// other than this user's own name.
    func whyNotPrivate(_ gid: gid_t, user uid: uid_t, effectiveGroup: gid_t) -> String? {
        guard gid == effectiveGroup else { return "group \(gid) is not this process's group (\(effectiveGroup))" }
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

    private static func lines(_ bytes: [UInt8]) -> [String] {
        String(decoding: bytes, as: UTF8.self).nonEmptyFields(separatedBy: 0x0A)
    }

    /// The colon-separated fields of a line, empty ones kept.
    private static func fields(_ line: String) -> [String] {
        var result: [String] = []
        var field: [UInt8] = []
        for byte in line.utf8 {
            if byte == 0x3A /* : */ {
                result.append(String(decoding: field, as: UTF8.self))
                field.removeAll(keepingCapacity: true)
            } else if byte != 0x0D {
                field.append(byte)
            }
        }
        result.append(String(decoding: field, as: UTF8.self))
        return result
    }
}
