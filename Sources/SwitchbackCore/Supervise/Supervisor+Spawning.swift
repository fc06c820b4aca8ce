#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// Starting children: the listening sockets every child gets, the child's environment and
/// descriptors, posix_spawn.
extension Supervisor {
    /// The sockets systemd passed (socket activation: LISTEN_PID is this process), else the
    /// declared addresses, opened here. Moved to descriptors 64 and up, close-on-exec, so
    /// that every child gets them at 3... without a collision.
    static func openListeners(_ addresses: [ListenAddress]) -> [(fd: Int32, name: String, address: String)] {
        var opened: [(fd: Int32, name: String, address: String)] = []
        if environmentValue("LISTEN_PID").flatMap(Int32.init) == getpid(),
           let count = environmentValue("LISTEN_FDS").flatMap(Int32.init), count > 0, count <= 32 {
            let names = (environmentValue("LISTEN_FDNAMES") ?? "").split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            for index in 0..<Int(count) {
                let fd = Int32(3 + index)
                let name = index < names.count ? names[index] : "listen"
                let address = ListenAddress(boundTo: fd, name: name)?.description ?? "systemd's socket \(index + 1)"
                opened.append((fd, name, address))
            }
        } else {
            for address in addresses {
                do { opened.append((try address.open(among: addresses), address.name, address.description)) } catch { Launcher.fail(error.message) }
            }
        }
        for name in ["LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID"] { unsetenv(name) }
        return opened.map { listener in
            let moved = fcntl(listener.fd, F_DUPFD_CLOEXEC, Int32(64))
            if moved < 0 { Launcher.fail("supervisor: cannot keep the listening socket \(listener.address): \(errorString(errno)).") }
            close(listener.fd)
            return (moved, listener.name, listener.address)
        }
    }

    /// Starts a child on the listening sockets, and says how that went as the machine's event.
    func spawn(_ launch: SupervisorMachine.Launch, intended: BuildSlot?, forcedSlot: BuildSlot? = nil) -> SupervisorMachine.Event {
        var pipeFDs: [Int32] = [-1, -1]
        guard switchback_pipe_cloexec(&pipeFDs) == 0 else { Launcher.fail("supervisor: pipe failed: \(errorString(errno)).") }
        // Both ends above the descriptors the child gets, so no dup2 overwrites another.
        let readEnd = fcntl(pipeFDs[0], F_DUPFD_CLOEXEC, Int32(64))
        let writeEnd = fcntl(pipeFDs[1], F_DUPFD_CLOEXEC, Int32(64))
        close(pipeFDs[0])
        close(pipeFDs[1])
        let reportTarget = Int32(3 + listeners.count)

        var environment = Self.inheritedEnvironment()
        if let forcedSlot {
            environment.removeAll { $0.hasPrefix("SWITCHBACK_SLOT=") }
            environment.append("SWITCHBACK_SLOT=\(forcedSlot.rawValue)")
        }
        environment.append("\(Self.parentVariable)=\(getpid())")
        environment.append("\(Self.reportVariable)=\(reportTarget)")
        environment.append("NOTIFY_SOCKET=\(notify.name)")
        if !listeners.isEmpty {
            environment.append("LISTEN_FDS=\(listeners.count)")
            environment.append("LISTEN_FDNAMES=\(listeners.map(\.name).joined(separator: ":"))")
        }
        if settings.watchdogMilliseconds > 0 { environment.append("WATCHDOG_USEC=\(settings.watchdogMilliseconds * 1000)") }

        // Read before the child exists, so that a good mark it writes is not in it.
        let goodBuildsNow = goodBuilds()

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (index, listener) in listeners.enumerated() { posix_spawn_file_actions_adddup2(&actions, listener.fd, Int32(3 + index)) }
        posix_spawn_file_actions_adddup2(&actions, writeEnd, reportTarget)
        switchback_spawn_close_from(&actions, reportTarget + 1)

        var pid: pid_t = 0
        let result = withCStrings(environment) { envp in
            withChildSpawnAttributes { posix_spawn(&pid, launcherPath, &actions, $0, CommandLine.unsafeArgv, UnsafeMutablePointer(mutating: envp)) }
        }
        close(writeEnd)
        if result != 0 {
            close(readEnd)
            return .spawnFailed(launch, error: errorString(result))
        }
        reportFDs[pid] = readEnd
        return .spawned(launch, pid: pid, intendedSlot: intended, goodBuilds: goodBuildsNow)
    }

    /// This process's environment without the variables the supervisor sets for its children.
    static func inheritedEnvironment() -> [String] {
        var environment: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if !childVariables.contains(name) { environment.append(text) }
            entry += 1
        }
        return environment
    }
}
