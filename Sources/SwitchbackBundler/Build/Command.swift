import Foundation

/// Runs another program and waits for it: the toolchain's `swift`, `git`, `tar` and
/// `llvm-objcopy`, nothing else.
struct Command {
    var executable: String
    var arguments: [String]
    var environment: [String: String]? = nil

    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
    }

    struct Result {
        var status: Int32
        var output: String
    }

    /// Runs the command with its standard output and error captured together (or, with
    /// `logTo`, written to that file), stdin /dev/null. Throws `.tool` when it cannot be
    /// started. posix_spawn and waitpid: Foundation's `Process.waitUntilExit` polls its run
    /// loop and added about 50 ms to each of the dozen commands of a release.
    @discardableResult
    func run(logTo log: String? = nil) throws(BundlerError) -> Result {
        func cannotRun(_ code: Int32) -> BundlerError {
            BundlerError(.tool, "Cannot run \(executable): \(String(cString: strerror(code))); install it or put it on PATH.", path: executable)
        }
        var pipeEnds: [Int32] = [-1, -1]
        if log == nil {
            // The bundler runs no threads of its own: nothing can spawn between pipe and fcntl.
            guard pipe(&pipeEnds) == 0 else { throw cannotRun(errno) }
            for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let log {
            posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
        }
        let environment = (self.environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let spawned = Self.withCStrings([executable] + arguments) { argv in
            Self.withCStrings(environment) { envp in posix_spawn(&pid, executable, &actions, nil, argv, envp) }
        }
        if log == nil { close(pipeEnds[1]) }
        guard spawned == 0 else {
            if log == nil { close(pipeEnds[0]) }
            throw cannotRun(spawned)
        }
        var output: [UInt8] = []
        if log == nil {
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                output += buffer[0..<count]
            }
            close(pipeEnds[0])
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // Exited: its code; killed by a signal: 128 + the signal, as a shell says it.
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Result(status: code, output: String(decoding: output, as: UTF8.self))
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return body(pointers)
    }

    /// Runs the command and returns its output, trimmed; throws `failure` (with the output's
    /// last lines appended) when it exits non-zero.
    func output(or failure: (String) -> BundlerError) throws(BundlerError) -> String {
        let result = try run()
        guard result.status == 0 else { throw failure(result.output.lastLines(12)) }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The absolute path of `name` on PATH, or nil.
    static func find(_ name: String, extraDirectories: [String] = []) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in extraDirectories + path.split(separator: ":").map(String.init) {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

extension String {
    /// The last `count` lines.
    func lastLines(_ count: Int) -> String {
        split(separator: "\n", omittingEmptySubsequences: false).suffix(count).joined(separator: "\n")
    }
}
