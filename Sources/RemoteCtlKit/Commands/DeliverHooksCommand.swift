import CSwitchbackSystem
#if canImport(Glibc)
import Glibc
#endif
import RollbackCtlKit
import SwitchbackCore
import SwitchbackCrypto
import SwitchbackFiles

/// `deliver-hooks`: delivers the events queued in `DIR/hooks/queue` (`HookQueue`) to the
/// bundle's hooks (`HookSettings`), oldest first, one deliverer at a time (docs/hooks.md).
///
/// - A command hook gets the event's JSON on its stdin, `SWITCHBACK_EVENT_ID` and
///   `SWITCHBACK_EVENT_KIND` in its environment, and `hooks.timeout_ms` to exit 0; past it,
///   its process group is killed.
/// - A webhook gets a POST of the same bytes with `X-Switchback-Event`,
///   `X-Switchback-Event-Id`, `X-Switchback-Timestamp: T` and `X-Switchback-Signature:
///   sha256=HEX`, HEX the HMAC-SHA256 of `T.BODY` under the key in `hooks.secret_file`; a 2xx
///   answer within `hooks.timeout_ms` delivers it (no redirect is followed).
/// - A failed delivery is tried again `hooks.retries` times, after 1 s, 2 s, 4 s ...; each
///   target is tried until it took the event. Then the event leaves the queue, and a failure
///   is counted in `hooks/status` with its sentence (`rollbackctl status` shows it).
struct DeliverHooksCommand: Command {
    static let configuration = CommandConfiguration.deliverHooks

    let workspace: Workspace

    init(_ parsed: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        workspace = try context.workspace()
    }

    func run(_ console: Console) throws(CommandError) {
        // A command that exits before it read its stdin closes the pipe: the write gets EPIPE,
        // not a SIGPIPE that would kill the deliverer with the event still queued (it did, on
        // a loaded machine, for a command that only exits 3).
        signal(SIGPIPE, SIG_IGN)
        let directory = workspace.directory
        let settings: HookSettings
        do {
            guard let parsed = try HookSettings.parse(HookSettings.settings(in: workspace.manifest.settings)) else { return }
            settings = parsed
        } catch {
            throw .failure(error.message, code: .configInvalid)
        }
        let queue = HookQueue(directory: directory)
        let lock: Int32
        do {
            let hooks = try FileSystem.directory(queue.path, what: "hook directory", creating: true)
            guard let fd = try hooks.openFile("deliver.lock", flags: O_RDWR | O_CREAT | O_CLOEXEC) else { return }
            lock = fd
        } catch let error as SwitchbackError {
            throw .failure(error.message)
        } catch {
            throw .failure("The hook directory \(queue.path) cannot be used: \(error).")
        }
        defer { close(lock) }
        let delivery = Delivery(settings: settings)
        while true {
            // Another deliverer runs: it looks at the queue again before it leaves.
            guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { return }
            while let name = queue.pending().first {
                delivery.deliver(name, from: queue, recordingIn: directory)
                // The metrics' hook counts (`switchback_hook_events_total`) follow each delivery,
                // written under the state lock as every other writer of the file does (a view
                // rendered beside a switch could otherwise land after it, stale).
                if let lock = try? FileLock.acquire(path: directory.lockPath, wait: true, timeout: 2) {
                    withExtendedLifetime(lock) { Observer.refreshMetrics(in: directory, manifest: workspace.manifest) }
                }
            }
            flock(lock, LOCK_UN)
            // An event queued after the last look, whose deliverer found the lock held.
            if queue.pending().isEmpty { return }
        }
    }
}

/// One event's delivery to each target, with its retries (`send`), and what a queued event
/// leaves in `hooks/status` (`deliver`).
struct Delivery {
    let settings: HookSettings

    func deliver(_ name: String, from queue: HookQueue, recordingIn directory: StateDirectory) {
        defer { queue.remove(name) }
        guard let bytes = queue.read(name) else { return }
        let id = String(name.dropLast(".json".count).split(separator: "-").last ?? "")
        let kind = Self.field("kind", in: String(decoding: bytes, as: UTF8.self)) ?? "event"
        let failure = send(bytes, id: id, kind: kind)
        var status = HookStatus.load(in: directory)
        let now = currentUnixTime()
        if let failure {
            status.failed += 1
            status.lastFailure = failure
            status.lastFailureAt = now
        } else {
            status.delivered += 1
            status.lastDeliveredAt = now
        }
        try? status.save(in: directory)
    }

    /// Sends the event to every target, each tried until it took it or the retries ran out;
    /// nil when all took it, else the sentence of what failed.
    func send(_ bytes: [UInt8], id: String, kind: String) -> String? {
        var pending: [Target] = []
        if let command = settings.command { pending.append(.command(command)) }
        if let url = settings.url { pending.append(.webhook(url)) }
        var failures: [String] = []
        for attempt in 0...settings.retries {
            if attempt > 0 { Self.sleep(milliseconds: HookSettings.backoffMilliseconds(attempt: attempt)) }
            failures = []
            pending = pending.filter { target in
                guard let failure = send(bytes, to: target, id: id, kind: kind) else { return false }
                failures.append(failure)
                return true
            }
            if pending.isEmpty { return nil }
        }
        return "the \(kind) event \(id) was not delivered after \(settings.retries + 1) tr\(settings.retries == 0 ? "y" : "ies"): \(failures.joined(separator: "; "))"
    }

    enum Target {
        case command(String)
        case webhook(String)
    }

    /// Sends the event to one target; nil when it took it, else why not (a clause).
    func send(_ bytes: [UInt8], to target: Target, id: String, kind: String) -> String? {
        switch target {
        case .command(let path): return run(path, input: bytes, id: id, kind: kind)
        case .webhook(let url): return post(url, body: bytes, id: id, kind: kind)
        }
    }

    /// Runs the command with the event on its stdin, killed past the timeout.
    func run(_ path: String, input: [UInt8], id: String, kind: String) -> String? {
        let program: ProgramFile
        do {
            program = try ProgramFile.open(path, what: "hook command", allowingScripts: true, remedy: "fix it or hooks.command")
        } catch {
            return error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message
        }
        var fds: [Int32] = [-1, -1]
        guard switchback_pipe_cloexec(&fds) == 0 else { return "the hook command \(path) could not be started: pipe failed (\(errorString(errno)))" }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A group of its own: a timeout kills whatever it started too.
        posix_spawnattr_setpgroup(&attributes, 0)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        // SIGPIPE back to its default in the command (ignored here, and an ignored signal
        // stays ignored across exec).
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let environment = PendingSteps.processEnvironment().filter { !$0.hasPrefix("SWITCHBACK_EVENT_") }
            + ["SWITCHBACK_EVENT_ID=\(id)", "SWITCHBACK_EVENT_KIND=\(kind)"]
        var pid: pid_t = 0
        let spawned = withExtendedLifetime(program) {
            withCStrings([path]) { argv in
                withCStrings(environment) { envp in posix_spawn(&pid, path, &actions, &attributes, UnsafeMutablePointer(mutating: argv), UnsafeMutablePointer(mutating: envp)) }
            }
        }
        close(fds[0])
        guard spawned == 0 else {
            close(fds[1])
            return "the hook command \(path) could not be started (\(errorString(spawned)))"
        }
        // The event is far below a pipe's buffer: the write never waits for the command.
        _ = input.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
        close(fds[1])
        let giveUpAt = monotonicNow() + Double(settings.timeoutMilliseconds) / 1000
        var status: Int32 = 0
        while true {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid { break }
            if done < 0 && errno != EINTR { return "the hook command \(path) could not be waited for (\(errorString(errno)))" }
            if monotonicNow() >= giveUpAt {
                kill(-pid, SIGKILL)
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                return "the hook command \(path) did not finish within \(settings.timeoutMilliseconds) ms (hooks.timeout_ms) and was killed"
            }
            Self.sleep(milliseconds: 5)
        }
        if switchback_exited(status) != 0 {
            let code = switchback_exit_code(status)
            return code == 0 ? nil : "the hook command \(path) exited with code \(code)"
        }
        return "the hook command \(path) was killed by signal \(switchback_term_signal(status))"
    }

    /// POSTs the event, signed.
    func post(_ url: String, body: [UInt8], id: String, kind: String) -> String? {
        let key: [UInt8]
        do { key = try Self.readSecret(settings.secretFile ?? "") } catch { return error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message }
        let timestamp = String(currentUnixTime())
        let signature = HMACSHA256.code(key: key, message: Array((timestamp + ".").utf8) + body).hexString
        let headers = ["Content-Type: application/json", "X-Switchback-Event: \(kind)", "X-Switchback-Event-Id: \(id)",
                       "X-Switchback-Timestamp: \(timestamp)", "X-Switchback-Signature: sha256=\(signature)", "Expect:"]
        let answer = HookPost.send(url, body: body, headers: headers, timeoutMilliseconds: settings.timeoutMilliseconds)
        if let failure = answer.failure { return "the webhook \(url) \(failure)" }
        return (200...299).contains(answer.status) ? nil : "the webhook \(url) answered \(answer.status)"
    }

    /// The key in `path`: a regular file of this user or root, not writable by others nor
    /// readable by everyone, read without following a link; throws a sentence.
    static func readSecret(_ path: String) throws(SwitchbackError) -> [UInt8] {
        let what = "hook secret file"
        guard let resolved = try StrictModes.resolve(path, what: what),
              let fd = try StrictModes.openNoFollow(resolved, what: what, flags: O_RDONLY) else {
            throw SwitchbackError(.fileNotFound, "The hook secret file \(path) is missing; create it (e.g. head -c 32 /dev/urandom | base64 > \(path); chmod 600 \(path)) or fix hooks.secret_file.", path: path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .system("Inspecting", path: resolved, errno: errno) }
        try StrictModes.checkOwnerAndMode(info, path: resolved, what: what)
        guard info.st_mode & 0o004 == 0 else {
            throw SwitchbackError(.insecurePermissions, "The hook secret file \(resolved) is readable by every user (mode \(String(info.st_mode & 0o7777, radix: 8))); refusing to sign with it: run 'chmod o-r \(resolved)' and change the key.", path: resolved)
        }
        var key = try FileSystem.readToEnd(fd, path: resolved, limit: 4096)
        while let last = key.last, last == 0x0A || last == 0x0D { key.removeLast() }
        guard !key.isEmpty else {
            throw SwitchbackError(.invalidArgument, "The hook secret file \(resolved) is empty; write the key into it.", path: resolved)
        }
        return key
    }

    /// A string field of our own one-line JSON (`"kind":"switch"`).
    static func field(_ name: String, in json: String) -> String? {
        let marker = Array("\"\(name)\":\"".utf8)
        let bytes = Array(json.utf8)
        guard bytes.count > marker.count else { return nil }
        for start in 0...(bytes.count - marker.count) where Array(bytes[start..<(start + marker.count)]) == marker {
            let rest = bytes[(start + marker.count)...]
            guard let end = rest.firstIndex(of: 0x22) else { return nil }
            return String(decoding: rest[..<end], as: UTF8.self)
        }
        return nil
    }

    static func sleep(milliseconds: Int) {
        var pause = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var left = timespec()
        while nanosleep(&pause, &left) < 0 && errno == EINTR { pause = left }
    }
}
