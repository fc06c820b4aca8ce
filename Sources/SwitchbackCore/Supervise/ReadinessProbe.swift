#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// One attempt of a readiness probe (`ReadinessCheck`), driven by the supervisor's poll
/// loop without blocking it: a non-blocking connect (and, for HTTP, a GET and its status
/// line), or a command the loop reaps like a child. Each attempt ends within `timeout`.
final class ReadinessProbe {
    enum Outcome: Equatable {
        case passed
        case failed(String)
    }

    private enum Phase { case connecting, sending, reading }

    let check: ReadinessCheck
    let deadline: Double
    private(set) var fd: Int32 = -1
    private(set) var commandPID: pid_t?
    private var phase = Phase.connecting
    private var request: [UInt8] = []
    private var sent = 0
    private var received: [UInt8] = []
    /// The outcome known at once (a failed connect, a failed spawn).
    private(set) var immediate: Outcome?

    init(_ check: ReadinessCheck, childPID: pid_t, timeout: Double) {
        self.check = check
        deadline = monotonicNow() + timeout
        switch check {
        case .mark:
            immediate = .failed("no probe")
        case .tcp(let address):
            connect(to: address)
        case .http(let address, let path):
            request = Array("GET \(path) HTTP/1.1\r\nHost: \(address)\r\nUser-Agent: switchback-supervisor\r\nConnection: close\r\n\r\n".utf8)
            connect(to: address)
        case .command(let command):
            spawn(command, childPID: childPID)
        }
    }

    /// The events to poll for, when the probe waits on a socket.
    var events: Int16? {
        guard fd >= 0 else { return nil }
        return Int16(phase == .reading ? POLLIN : POLLOUT)
    }

    /// Advances after poll said the socket is ready; returns the outcome once known.
    func advance() -> Outcome? {
        switch phase {
        case .connecting:
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0 { return finish(.failed("connect: \(errorString(error))")) }
            if case .tcp = check { return finish(.passed) }
            phase = .sending
            return advance()
        case .sending:
            let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 { return errno == EAGAIN ? nil : finish(.failed("send: \(errorString(errno))")) }
            sent += count
            if sent == request.count { phase = .reading }
            return nil
        case .reading:
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 { return errno == EAGAIN ? nil : finish(.failed("receive: \(errorString(errno))")) }
            received += buffer[0..<count]
            if let end = received.firstIndex(of: 0x0A) ?? (count == 0 || received.count >= 512 ? received.endIndex : nil) {
                let line = String(decoding: received[..<end], as: UTF8.self).trimmingSuffix("\r")
                let words = line.split(separator: " ")
                guard words.count >= 2, words[0].hasPrefix("HTTP/"), let status = Int(words[1]) else {
                    return finish(.failed("the answer is not HTTP"))
                }
                return finish((200..<300).contains(status) ? .passed : .failed("HTTP \(status)"))
            }
            return nil
        }
    }

    /// The command's exit status, when the supervisor reaped it. What it left running in its
    /// process group is killed: an attempt leaves nothing behind.
    func commandExited(_ status: Int32) -> Outcome {
        if let commandPID { kill(-commandPID, SIGKILL) }
        commandPID = nil
        if switchback_exited(status) != 0 {
            let code = switchback_exit_code(status)
            return code == 0 ? .passed : .failed("exited with code \(code)")
        }
        return .failed("was killed by signal \(switchback_term_signal(status))")
    }

    /// Stops the attempt: closes the socket, kills the command's whole process group (the
    /// shell and whatever it started; the loop reaps the shell).
    func cancel() {
        if fd >= 0 { close(fd); fd = -1 }
        if let commandPID { kill(-commandPID, SIGKILL) }
    }

    private func finish(_ outcome: Outcome) -> Outcome {
        cancel()
        return outcome
    }

    private func connect(to address: ListenAddress) {
        fd = switchback_stream_socket(address.isIPv6 ? AF_INET6 : AF_INET, 1)
        guard fd >= 0 else { immediate = .failed("socket: \(errorString(errno))"); return }
        let result = address.withSocketAddress { Glibc.connect(fd, $0, $1) }
        if result == 0 {
            if case .tcp = check { immediate = finish(.passed) } else { phase = .sending }
        } else if errno != EINPROGRESS {
            immediate = finish(.failed("connect: \(errorString(errno))"))
        }
    }

    private func spawn(_ command: String, childPID: pid_t) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for target in [Int32(0), 1, 2] { posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_RDWR, 0) }
        switchback_spawn_close_from(&actions, 3)
        var environment: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            environment.append(String(cString: pointer))
            entry += 1
        }
        environment.append("SWITCHBACK_CHILD_PID=\(childPID)")
        var pid: pid_t = 0
        let result = withCStrings(["/bin/sh", "-c", command]) { argv in
            withCStrings(environment) { envp in
                withChildSpawnAttributes { attributes in
                    // A process group of its own (its pid), so that a timeout kills all of it.
                    let mutable = UnsafeMutablePointer(mutating: attributes)
                    var flags: Int16 = 0
                    posix_spawnattr_getflags(mutable, &flags)
                    posix_spawnattr_setflags(mutable, flags | Int16(POSIX_SPAWN_SETPGROUP))
                    posix_spawnattr_setpgroup(mutable, 0)
                    return posix_spawn(&pid, "/bin/sh", &actions, attributes, UnsafeMutablePointer(mutating: argv), UnsafeMutablePointer(mutating: envp))
                }
            }
        }
        if result == 0 { commandPID = pid } else { immediate = .failed("/bin/sh: \(errorString(result))") }
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
