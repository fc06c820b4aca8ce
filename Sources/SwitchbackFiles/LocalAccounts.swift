#if canImport(Glibc)
import Glibc
#endif

/// The private-group rule of `TrustPolicy.strict`, as SwitchbackCore's `StrictModes` applies
/// it (Debian OpenSSH's "user-group-modes"): a directory writable by its group is trusted
/// only when that group is this process's effective group, no other account has it as its
/// primary group, and /etc/group lists no other member. That is a Kubernetes volume with
/// `fsGroup` equal to the pod's `runAsGroup`. /etc/passwd and /etc/group are parsed, not
/// asked through NSS (which `dlopen`s modules), and read only when a directory is
/// group-writable.
enum LocalAccounts {
    /// Why `gid` is not the private group of `uid` running as `effectiveGroup`, as a clause;
    /// nil when it is.
    static func whyNotPrivate(_ gid: gid_t, user uid: uid_t, effectiveGroup: gid_t,
                              passwdPath: String = "/etc/passwd", groupPath: String = "/etc/group") -> String? {
        guard gid == effectiveGroup else { return "group \(gid) is not this process's group (\(effectiveGroup))" }
        guard let passwd = read(passwdPath), let group = read(groupPath) else {
            return "whether other accounts share group \(gid) is unknown (/etc/passwd or /etc/group cannot be read)"
        }
        var names: [String] = []
        for line in passwd {
            let fields = fields(line)
            guard fields.count >= 4, !fields[0].isEmpty, let accountUID = uid_t(fields[2]), let accountGID = gid_t(fields[3]) else { continue }
            if accountUID == uid { names.append(fields[0]) }
            if accountGID == gid && accountUID != uid {
                return "the account \(fields[0]) (uid \(accountUID)) also has group \(gid) as its primary group"
            }
        }
        for line in group {
            let fields = fields(line)
            guard fields.count >= 4, gid_t(fields[2]) == gid else { continue }
            for member in fields[3].split(separator: ",").map(String.init) where !member.isEmpty && !names.contains(member) {
                return "/etc/group lists \(member) as a member of group \(gid)"
            }
        }
        return nil
    }

    /// The lines of a small file; a missing file has none (a container image without one),
    /// one that exists but cannot be read is nil, so the rule refuses rather than guesses.
    static func read(_ path: String) -> [String]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 { return errno == ENOENT ? [] : nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 { if errno == EINTR { continue }; return nil }
            if count == 0 { break }
            bytes += chunk[0..<count]
            if bytes.count > 64 << 20 { return nil }
        }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// The colon-separated fields of a line, empty ones kept.
    static func fields(_ line: String) -> [String] {
        line.split(separator: ":", omittingEmptySubsequences: false).map { $0.filter { $0 != "\r" } }
    }
}
