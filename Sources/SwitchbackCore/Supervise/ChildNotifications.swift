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
    /// The descriptor of `<directory>/lock`, locked (flock) for the supervisor's lifetime:
    /// what tells another supervisor's clean-up that the directory's owner lives.
    let lock: Int32

    /// How many times a directory another process removed before the socket was bound is
    /// made again before the supervisor gives up.
    static let attempts = 8

    init() throws(SwitchbackError) {
        var lost = 0
        while true {
            let (directory, lock) = try Self.makePrivateDirectory()
            let name = directory + "/notify"
            Self.registerRemovalAtExit(socket: name, directory: directory)
            let fd = switchback_datagram_socket()
            guard fd >= 0 else {
                let error = errno
                close(lock)
                Self.removeAtExit()
                throw SwitchbackError(.ioFailure, "The supervisor cannot open its notify socket: \(errorString(error)).", errno: error)
            }
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_un()
            let length = switchback_unix_address(name, &address)
            let bound = length == 0 ? -1 : withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) } }
            let error = length == 0 ? ENAMETOOLONG : errno
            // Removed under it (by a clean-up that is not this version's, or by hand): a new one.
            if (bound != 0 && error == ENOENT) || (bound == 0 && !Self.isStillHeld(lock, in: directory)) {
                close(fd)
                close(lock)
                Self.removal = nil  // its names may be another supervisor's by now: nothing is unlinked
                lost += 1
                if lost < Self.attempts {
                    Launcher.printError("launcher: supervisor: its notify directory \(directory) was removed by another process before the socket was bound; it makes a new one.")
                    continue
                }
                throw SwitchbackError(.ioFailure, "The supervisor's notify directory was removed by another process \(lost) times in a row (the last \(directory)); find what empties \(FileSystem.parentDirectory(of: directory)), or set TMPDIR to a directory only this service uses.")
            }
            guard bound == 0 else {
                close(fd)
                close(lock)
                Self.removeAtExit()
                throw SwitchbackError(.ioFailure, "The supervisor cannot bind its notify socket \(name): \(errorString(error)); check that \(directory) is on a file system that holds unix sockets, or set TMPDIR to another directory.", errno: error)
            }
            self.fd = fd
            self.name = name
            self.directory = directory
            self.lock = lock
            return
        }
    }

    /// Removes the socket and its directory (the supervisor is exiting).
    func remove() {
        close(fd)
        Self.removeAtExit()
        close(lock)
    }

    /// `$TMPDIR` when it is an absolute path whose owner is root or this user and which no
    /// other user can rename entries in (not writable by group or others, or sticky like
    /// /tmp), else /tmp; a fresh `switchback-notify-XXXXXX` directory in it, checked after
    /// mkdtemp(3) made it (a directory, this user's, mode 0700), with its `lock` file locked:
    /// made as `lock.new`, locked, then renamed, so that no clean-up ever finds a `lock` its
    /// owner does not hold yet. A directory removed by another process in between is made
    /// again.
    static func makePrivateDirectory() throws(SwitchbackError) -> (directory: String, lock: Int32) {
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
            problem = ""
            for _ in 0..<attempts {
                var template = Array((parent + "/\(prefix)XXXXXX").utf8CString)
                guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
                    problem = "mkdtemp in \(parent): \(errorString(errno))"
                    break
                }
                let made = String(cString: template)
                var madeInfo = stat()
                guard lstat(made, &madeInfo) == 0 else {
                    if errno == ENOENT { continue }  // removed at once by another process: a new one
                    problem = "\(made): \(errorString(errno))"
                    break
                }
                guard madeInfo.st_mode & S_IFMT == S_IFDIR, madeInfo.st_uid == geteuid(), madeInfo.st_mode & 0o7777 == 0o700 else {
                    rmdir(made)
                    problem = "\(made) is not a directory of this user's with mode 0700 after mkdtemp"
                    break
                }
                let fresh = made + "/lock.new"
                let lock = open(fresh, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                guard lock >= 0 else {
                    let error = errno
                    rmdir(made)
                    if error == ENOENT { continue }
                    problem = "\(fresh): \(errorString(error))"
                    break
                }
                guard flock(lock, LOCK_EX | LOCK_NB) == 0, rename(fresh, made + "/lock") == 0 else {
                    let error = errno
                    close(lock)
                    unlink(fresh)
                    rmdir(made)
                    if error == ENOENT { continue }
                    problem = "\(made)/lock: \(errorString(error))"
                    break
                }
                return (made, lock)
            }
            if problem.isEmpty { problem = "every directory made in \(parent) was removed at once by another process" }
        }
        throw SwitchbackError(.ioFailure, "The supervisor cannot make a private directory for its notify socket (\(problem)); make /tmp a sticky directory root owns (mode 1777), or set TMPDIR to a directory only root can write.")
    }

    /// Whether `<directory>/lock` is still the file `lock` holds (nobody removed the
    /// directory, or made another of its name, since).
    static func isStillHeld(_ lock: Int32, in directory: String) -> Bool {
        var held = stat(), there = stat()
        return fstat(lock, &held) == 0 && lstat(directory + "/lock", &there) == 0
            && held.st_dev == there.st_dev && held.st_ino == there.st_ino
    }

    static let prefix = "switchback-notify-"

    /// How old a directory with neither lock nor socket must be before it counts as left
    /// by a supervisor killed between mkdtemp and its lock (a few system calls apart).
    static let unlockedAgeSeconds = 3600

    /// Removes what supervisors of this user killed with SIGKILL left in `parent`: a
    /// `switchback-notify-*` directory of this user's whose owner is provably gone:
    /// - its `lock` can be locked (its owner held it from before it had that name until it
    ///   died; the kernel released it then);
    /// - no `lock` but a socket nobody is bound to (a datagram connect to it is refused): an
    ///   older supervisor's;
    /// - neither, and older than ``unlockedAgeSeconds``: one whose owner died between mkdtemp
    ///   and its lock.
    /// A directory being made (no `lock` yet, or `lock.new` only) is never removed.
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
            let lockPath = directory + "/lock"
            let socketPath = directory + "/notify"
            let lock = open(lockPath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            if lock >= 0 {
                defer { close(lock) }
                var held = stat(), there = stat()
                guard fstat(lock, &held) == 0, held.st_mode & S_IFMT == S_IFREG, held.st_uid == geteuid(),
                      flock(lock, LOCK_EX | LOCK_NB) == 0 else { continue }  // its owner lives
                // Gone. The name still ours to remove only while it is the file locked here.
                guard lstat(lockPath, &there) == 0, there.st_dev == held.st_dev, there.st_ino == held.st_ino else { continue }
                unlink(socketPath)
                unlink(directory + "/lock.new")
                unlink(lockPath)
                rmdir(directory)
                continue
            }
            guard errno == ENOENT else { continue }
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
                rmdir(directory)
                continue
            }
            // Being made, or left by an owner killed in the instant before its lock.
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            guard Int(now.tv_sec) - Int(info.st_mtim.tv_sec) > unlockedAgeSeconds else { continue }
            unlink(directory + "/lock.new")
            rmdir(directory)
        }
    }

    // What exit(3) removes: the supervisor leaves through Launcher.fail as well as finish().
    nonisolated(unsafe) private static var removal: (socket: [CChar], lock: [CChar], directory: [CChar])?
    nonisolated(unsafe) private static var isRegistered = false

    private static func registerRemovalAtExit(socket: String, directory: String) {
        removal = (Array(socket.utf8CString), Array((directory + "/lock").utf8CString), Array(directory.utf8CString))
        if !isRegistered {
            isRegistered = true
            atexit { ChildNotifications.removeAtExit() }
        }
    }

    private static func removeAtExit() {
        guard let paths = removal else { return }
        removal = nil
        _ = paths.socket.withUnsafeBufferPointer { unlink($0.baseAddress!) }
        _ = paths.lock.withUnsafeBufferPointer { unlink($0.baseAddress!) }
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
            // Split on the byte LF, as sd_notify's protocol and systemd do: never on
            // `Character`s, where "\r\n" is one that equals neither "\r" nor "\n".
            let fields = buffer[0..<count].split(separator: 0x0A).compactMap { line -> (key: Substring, value: Substring)? in
                guard let equals = line.firstIndex(of: 0x3D) else { return nil }
                return (Substring(String(decoding: line[..<equals], as: UTF8.self)),
                        Substring(String(decoding: line[line.index(after: equals)...], as: UTF8.self)))
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
