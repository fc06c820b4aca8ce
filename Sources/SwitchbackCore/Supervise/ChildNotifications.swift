#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem
import SystemdNotify

/// The supervisor's end of its children's NOTIFY_SOCKET: a datagram socket bound at a path
/// inside a directory of its own, created for this supervisor with mkdtemp(3) (mode 0700,
/// owned by the supervisor's user, checked after it was made), so that no other user can
/// reach the socket, let alone fill its queue and make a child's `READY=1` go lost. A path,
/// not a socketpair: any sd_notify client (libsystemd, a Vapor or Hummingbird app's) sends to
/// `$NOTIFY_SOCKET` as it is. With SO_PASSCRED every message carries the sender's pid as the
/// kernel saw it; messages from any process but a child are dropped, as systemd's
/// NotifyAccess=main does. The socket and its directory are removed when the supervisor
/// exits (``remove()``, and at exit(3) on every other way out).
final class ChildNotifications {
    let fd: Int32
    /// The value children get in NOTIFY_SOCKET: `<directory>/notify`.
    let name: String
    /// The directory made for the socket.
    let directory: String

    init() throws(SwitchbackError) {
        directory = try Self.makePrivateDirectory()
        name = directory + "/notify"
        Self.registerRemovalAtExit(socket: name, directory: directory)
        fd = switchback_datagram_socket()
        guard fd >= 0 else {
            let error = errno
            Self.removeAtExit()
            throw SwitchbackError(.ioFailure, "The supervisor cannot open its notify socket: \(errorString(error)).", errno: error)
        }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_un()
        let length = switchback_unix_address(name, &address)
        let bound = length == 0 ? -1 : withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) } }
        guard bound == 0 else {
            let error = length == 0 ? ENAMETOOLONG : errno
            close(fd)
            Self.removeAtExit()
            throw SwitchbackError(.ioFailure, "The supervisor cannot bind its notify socket \(name): \(errorString(error)); check that \(directory) is on a file system that holds unix sockets, or set TMPDIR to another directory.", errno: error)
        }
    }

    /// Removes the socket and its directory (the supervisor is exiting).
    func remove() {
        close(fd)
        Self.removeAtExit()
    }

    /// `$TMPDIR` when it is an absolute path whose owner is root or this user and which no
    /// other user can rename entries in (not writable by group or others, or sticky like
    /// /tmp), else /tmp; a fresh `switchback-notify-XXXXXX` directory in it, checked after
    /// mkdtemp(3) made it: a directory, this user's, mode 0700.
    static func makePrivateDirectory() throws(SwitchbackError) -> String {
        var parents = ["/tmp"]
        if let given = environmentValue("TMPDIR"), given.hasPrefix("/"), given.utf8.count <= 64 {
            var trimmed = given
            while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
            if trimmed != "/tmp" { parents.insert(trimmed, at: 0) }
        }
        var problem = ""
        for parent in parents {
            var info = stat()
            guard lstat(parent, &info) == 0 else { problem = "\(parent): \(errorString(errno))"; continue }
            let mode = info.st_mode & 0o7777
            guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == 0 || info.st_uid == geteuid(),
                  mode & 0o022 == 0 || mode & 0o1000 != 0 else {
                problem = "\(parent) is not a directory only its owner can rename entries in"
                continue
            }
            removeAbandonedDirectories(in: parent)
            var template = Array((parent + "/\(prefix)XXXXXX").utf8CString)
            guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
                problem = "mkdtemp in \(parent): \(errorString(errno))"
                continue
            }
            let made = String(cString: template)
            var madeInfo = stat()
            guard lstat(made, &madeInfo) == 0, madeInfo.st_mode & S_IFMT == S_IFDIR, madeInfo.st_uid == geteuid(),
                  madeInfo.st_mode & 0o7777 == 0o700 else {
                rmdir(made)
                problem = "\(made) is not a directory of this user's with mode 0700 after mkdtemp"
                continue
            }
            return made
        }
        throw SwitchbackError(.ioFailure, "The supervisor cannot make a private directory for its notify socket (\(problem)); make /tmp a sticky directory root owns (mode 1777), or set TMPDIR to a directory only root can write.")
    }

    static let prefix = "switchback-notify-"

    /// Removes what supervisors of this user killed with SIGKILL left in `parent`: a
    /// `switchback-notify-*` directory of this user's whose socket no longer has anyone
    /// bound to it (a datagram connect to it is refused, or it is gone).
    static func removeAbandonedDirectories(in parent: String) {
        guard let stream = opendir(parent) else { return }
        defer { closedir(stream) }
        var probe = -1 as Int32
        defer { if probe >= 0 { close(probe) } }
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasPrefix(prefix) else { continue }
            let directory = parent + "/" + name
            var info = stat()
            guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid(),
                  info.st_mode & 0o7777 == 0o700 else { continue }
            let socketPath = directory + "/notify"
            var socketInfo = stat()
            if lstat(socketPath, &socketInfo) == 0 {
                guard socketInfo.st_mode & S_IFMT == S_IFSOCK else { continue }
                if probe < 0 { probe = switchback_datagram_socket() }
                var address = sockaddr_un()
                let length = switchback_unix_address(socketPath, &address)
                guard probe >= 0, length > 0 else { continue }
                let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(probe, $0, length) } }
                // A live supervisor's socket: leave it (and unbind the probe from it).
                if connected == 0 || errno != ECONNREFUSED {
                    close(probe)
                    probe = -1
                    continue
                }
                unlink(socketPath)
            }
            rmdir(directory)
        }
    }

    // What exit(3) removes: the supervisor leaves through Launcher.fail as well as finish().
    nonisolated(unsafe) private static var removal: (socket: [CChar], directory: [CChar])?
    nonisolated(unsafe) private static var isRegistered = false

    private static func registerRemovalAtExit(socket: String, directory: String) {
        removal = (Array(socket.utf8CString), Array(directory.utf8CString))
        if !isRegistered {
            isRegistered = true
            atexit { ChildNotifications.removeAtExit() }
        }
    }

    private static func removeAtExit() {
        guard let paths = removal else { return }
        removal = nil
        _ = paths.socket.withUnsafeBufferPointer { unlink($0.baseAddress!) }
        _ = paths.directory.withUnsafeBufferPointer { rmdir($0.baseAddress!) }
    }

    /// The messages waiting, each with its sender's pid, as `KEY=VALUE` pairs.
    func receive() -> [(pid: pid_t, fields: [(key: Substring, value: Substring)])] {
        var messages: [(pid: pid_t, fields: [(key: Substring, value: Substring)])] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Bounded: a flood cannot keep the loop here.
        for _ in 0..<64 {
            var pid: pid_t = 0
            let count = buffer.withUnsafeMutableBytes { switchback_receive_with_sender(fd, $0.baseAddress, $0.count, &pid) }
            if count < 0 { break }
            let text = String(decoding: buffer[0..<count], as: UTF8.self)
            let fields = text.split(separator: "\n").compactMap { line -> (key: Substring, value: Substring)? in
                guard let equals = line.firstIndex(of: "=") else { return nil }
                return (line[..<equals], line[line.index(after: equals)...])
            }
            messages.append((pid, fields))
        }
        return messages
    }
}

/// The supervisor's own link to systemd, when it runs as a `Type=notify` service: the
/// NOTIFY_SOCKET and watchdog interval systemd gave it, taken out of the environment so that
/// children get the supervisor's own instead.
struct SystemdLink {
    let socket: String
    /// Half of WATCHDOG_USEC, in seconds, when systemd asks for pings.
    let watchdogPeriod: Double?

    static func take() -> SystemdLink? {
        let socket = environmentValue("NOTIFY_SOCKET")
        var period: Double?
        if let microseconds = environmentValue("WATCHDOG_USEC").flatMap(Int.init), microseconds > 0,
           environmentValue("WATCHDOG_PID").flatMap(Int32.init).map({ $0 == getpid() }) ?? true {
            period = Double(microseconds) / 2e6
        }
        for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { unsetenv(name) }
        guard let socket, !socket.isEmpty else { return nil }
        return SystemdLink(socket: socket, watchdogPeriod: period)
    }

    func send(_ lines: String...) {
        Self.send(lines.joined(separator: "\n"), to: socket)
    }

    /// Sends one datagram; a failure is not worth more than the message.
    static func send(_ text: String, to socket: String) {
        NotifySocket(name: socket)?.send(text)
    }
}
