#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// Asks a build which data migration steps it would run at its start, and who can read the
/// data after each, without running any: its planning run, `bin/launcher` started with
/// `SWITCHBACK_PLAN_STEPS=<slot>`, which loads that slot and nothing else and calls its
/// planning entry point (`switchback_pending_steps`). Before a live switch starts a build
/// beside the serving one, the supervisor asks this to choose the switch's path
/// (`LaunchPlanner.switchPath`): a step whose reader floor is above the serving version means
/// the serving build must stop before the target starts.
///
/// The child's answer on stdout: `step NAME VERSION FLOOR` per step (fields percent-encoded,
/// `-` for empty; see `SwitchbackPendingStepsFunction` in switchback.h) then `done`, exit 0;
/// `unknown`, exit 0, for a build without the entry point; `message=...`, exit 70, when it
/// failed. Anything else (a crash, a hang past the deadline, a line that is not one of
/// these) is a failure with one sentence; never a crash or a hang of the caller.
public struct PendingSteps {
    /// Set in the child's environment to the slot to ask: the launcher then plans instead of
    /// running the app (see `Launcher.runPlanSteps`).
    public static let modeVariable = "SWITCHBACK_PLAN_STEPS"
    /// The most output a planning run may print (a build with thousands of steps prints
    /// well under 1 MiB).
    static let outputLimit = 1 << 20

    /// Runs the planning run of `slot` of the bundle at `bundleRoot` (its own launcher: for a
    /// new bundle installed under a running supervisor, the new bundle's root), against the
    /// data of the state directory `directory`, and waits for it at most
    /// `deadlineMilliseconds`, killing it then.
    ///
    /// - Returns: the steps in the order the build would run them (empty: nothing to run);
    ///   `.success(nil)` when the build cannot say (it predates the planning entry point);
    ///   `.failure` with code `.planningFailed` and one sentence when the run failed, crashed,
    ///   hung or printed something else.
    public static func query(bundleRoot: String, manifest: Manifest, directory: StateDirectory, slot: BuildSlot,
                             deadlineMilliseconds: Int = 10_000) -> Result<[PendingStep]?, SwitchbackError> {
        let launcherPath = bundleRoot + "/bin/launcher"
        let build = "the \(slot.rawValue) build (\(manifest[slot].version))"
        let program: ProgramFile
        do { program = try ProgramFile.open(launcherPath, what: "launcher program") } catch {
            return .failure(SwitchbackError(.planningFailed, "Cannot ask \(build) which data steps it runs at its start: \(error.clause).",
                                            path: launcherPath))
        }
        let run = ChildRun.run(program, arguments: [launcherPath], environment: childEnvironment(slot: slot, directory: directory),
                               deadlineMilliseconds: deadlineMilliseconds, outputLimit: outputLimit)
        return interpret(run, build: build, path: launcherPath, deadlineMilliseconds: deadlineMilliseconds)
    }

    /// The caller's environment without what would make the child anything but a planning
    /// run (a downgrade, a supervisor's child, a forced start) or let it talk to a service
    /// manager or take listening sockets; `SWITCHBACK_DATA_DIR` and the app's own variables
    /// stay, so the child plans on the data the app uses.
    static func childEnvironment(slot: BuildSlot, directory: StateDirectory, inherited: [String] = processEnvironment()) -> [String] {
        let dropped: Set<String> = [
            modeVariable, DataDowngrade.modeVariable, "SWITCHBACK_SLOT", "SWITCHBACK_STATE_DIR", "SWITCHBACK_SUPERVISE",
            Launcher.failureVariable, Supervisor.parentVariable, Supervisor.reportVariable,
            "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
        ]
        var result = inherited.filter { !dropped.contains($0.split(separator: "=", maxSplits: 1).first.map(String.init) ?? $0) }
        result.append("\(modeVariable)=\(slot.rawValue)")
        result.append("SWITCHBACK_STATE_DIR=\(directory.path)")
        return result
    }

    /// This process's environment, `NAME=value` each.
    package static func processEnvironment() -> [String] {
        var result: [String] = []
        var index = 0
        while let entry = environ[index] {
            result.append(String(cString: entry))
            index += 1
        }
        return result
    }

    /// What the run came to, as the query's result.
    static func interpret(_ run: ChildRun, build: String, path: String, deadlineMilliseconds: Int) -> Result<[PendingStep]?, SwitchbackError> {
        func failed(_ what: String) -> Result<[PendingStep]?, SwitchbackError> {
            .failure(SwitchbackError(.planningFailed, "The planning run of \(build) \(what); until it answers, a switch to it stops the serving build first.", path: path))
        }
        let said = message(in: run.output)
        switch run.ending {
        case .notStarted(let errno):
            return failed("could not be started (\(errorString(errno)))")
        case .timedOut:
            return failed("did not answer within \(deadlineMilliseconds) ms and was killed: check what the app's migrations(_:launch:) and its baseline do before a step runs")
        case .tooMuchOutput:
            return failed("printed more than \(outputLimit >> 20) MiB and was killed")
        case .signaled(let signal):
            return failed("was killed by signal \(signal) (\(String(cString: strsignal(signal))))")
        case .exited(let code) where code != 0:
            return failed(said.map { "failed: \($0.hasSuffix(".") ? String($0.dropLast()) : $0)" } ?? "exited with code \(code) without saying why")
        case .exited, .reapedElsewhere:
            if let said, run.ending == .reapedElsewhere { return failed("failed: \(said)") }
            switch parse(run.output) {
            case .success(let steps): return .success(steps)
            case .failure(let problem): return failed(problem.clause)
            }
        }
    }

    /// The `message=` line of a failed run, if any.
    static func message(in output: [UInt8]) -> String? {
        for line in output.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("message=".utf8)) {
            return String(decoding: line.dropFirst("message=".utf8.count), as: UTF8.self)
        }
        return nil
    }

    /// Parses the output of a run that exited 0: the steps then `done`, or `unknown`; anything
    /// else is the clause that says what was wrong.
    static func parse(_ output: [UInt8]) -> Result<[PendingStep]?, PlanProblem> {
        var lines = output.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard lines.last == "" else { return .failure(PlanProblem(output.isEmpty ? "exited without printing anything" : "stopped in the middle of a line")) }
        lines.removeLast()
        if lines == ["unknown"] { return .success(nil) }
        guard lines.last == "done" else {
            return .failure(PlanProblem(lines.isEmpty ? "exited without printing anything" : "did not end its answer with 'done'"))
        }
        var steps: [PendingStep] = []
        for line in lines.dropLast() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 4, fields[0] == "step", let name = decode(fields[1]), !name.isEmpty,
                  let version = decode(fields[2]), let floor = decode(fields[3]) else {
                return .failure(PlanProblem("printed '\(quoted(line))', which is not a step"))
            }
            steps.append(PendingStep(name: name, version: version, readerFloor: floor))
        }
        return .success(steps)
    }

    /// A clause about a planning run's output.
    struct PlanProblem: Error, Equatable {
        var clause: String
        init(_ clause: String) { self.clause = clause }
    }

    /// Reverses the SDK's encoding (`PendingStepsReport.encode`): `-` is empty, `%XX` a byte.
    /// Nil for a malformed field (an empty one, a bad escape, bytes that are not UTF-8).
    static func decode(_ field: Substring) -> String? {
        if field == "-" { return "" }
        guard !field.isEmpty else { return nil }
        var bytes: [UInt8] = []
        var iterator = field.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    /// A line as a sentence may quote it: at most 80 characters, control characters as `?`.
    static func quoted(_ line: String) -> String {
        let shown = String(line.unicodeScalars.prefix(80).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        return line.unicodeScalars.count > 80 ? shown + "..." : shown
    }
}

/// One run of a child whose stdout is read to its end, bounded in time and size: the
/// planning run's process (`PendingSteps`).
struct ChildRun {
    /// How the child ended.
    enum Ending: Equatable {
        case exited(Int32)
        case signaled(Int32)
        /// The deadline passed: it was killed (SIGKILL) and reaped.
        case timedOut
        /// It printed more than the limit: killed and reaped.
        case tooMuchOutput
        /// posix_spawn or the pipe failed, with this errno.
        case notStarted(Int32)
        /// Someone else reaped it (a SIGCHLD handler waiting for any child): how it ended is
        /// unknown, its output says what it said.
        case reapedElsewhere
    }

    var output: [UInt8]
    var ending: Ending

    /// Why `spawn` started nothing: the pipe or posix_spawn failed, with this errno.
    struct SpawnFailure: Error {
        var inPipe: Bool
        var errno: Int32
    }

    /// Starts `program` from its checked descriptor (through procfs) with stdin /dev/null,
    /// stdout a pipe, stderr inherited, the signals a supervisor blocks unblocked, and this
    /// process named in `ParentDeath.variable` (it dies with this process): its pid
    /// and the pipe's read end (close-on-exec, the caller's to close).
    static func spawn(_ program: ProgramFile, arguments: [String], environment: [String]) -> Result<(pid: pid_t, output: Int32), SpawnFailure> {
        var pipeEnds: [Int32] = [-1, -1]
        guard switchback_pipe_cloexec(&pipeEnds) == 0 else { return .failure(SpawnFailure(inPipe: true, errno: errno)) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // dup2 clears close-on-exec on the child's stdout only.
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        var pid: pid_t = 0
        let spawned = withChildSpawnAttributes { attributes in
            withCStrings(arguments) { argv in
                // It dies with this process (ParentDeath): no orphan works on the data.
                withCStrings(environment.filter { !$0.hasPrefix(ParentDeath.variable + "=") } + [ParentDeath.environmentEntry]) { envp in
                    posix_spawn(&pid, program.procPath, &actions, attributes, argv, envp)
                }
            }
        }
        close(pipeEnds[1])
        guard spawned == 0 else {
            close(pipeEnds[0])
            return .failure(SpawnFailure(inPipe: false, errno: spawned))
        }
        return .success((pid, pipeEnds[0]))
    }

    /// Spawns `program` (stdin /dev/null, stdout a pipe, stderr inherited, signals as a child
    /// of a supervisor needs them), reads its stdout until it closes and the child exits, and
    /// kills it (SIGKILL) when `deadlineMilliseconds` pass first or it prints more than
    /// `outputLimit` bytes. The child is always reaped before this returns.
    static func run(_ program: ProgramFile, arguments: [String], environment: [String],
                    deadlineMilliseconds: Int, outputLimit: Int) -> ChildRun {
        let deadline = monotonicNow() + Double(max(0, deadlineMilliseconds)) / 1000
        let pid: pid_t, stdout: Int32
        switch spawn(program, arguments: arguments, environment: environment) {
        case .success(let child): (pid, stdout) = child
        case .failure(let failure): return ChildRun(output: [], ending: .notStarted(failure.errno))
        }
        defer { close(stdout) }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        // Read until end of file, the deadline or the limit.
        while true {
            let left = Int32(clamping: Int(((deadline - monotonicNow()) * 1000).rounded(.up)))
            if left <= 0 { return killed(pid, output: output, ending: .timedOut) }
            var waiter = pollfd(fd: stdout, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waiter, 1, left)
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { read(stdout, $0.baseAddress, $0.count) }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count <= 0 { break }
            output += buffer[0..<count]
            if output.count > outputLimit { return killed(pid, output: output, ending: .tooMuchOutput) }
        }
        // Its stdout closed: wait for its exit, still bounded (it may linger without stdout).
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { return ChildRun(output: output, ending: .reapedElsewhere) }
            if monotonicNow() >= deadline { return killed(pid, output: output, ending: .timedOut) }
            usleep(2_000)
        }
        if switchback_exited(status) == 0 { return ChildRun(output: output, ending: .signaled(switchback_term_signal(status))) }
        return ChildRun(output: output, ending: .exited(switchback_exit_code(status)))
    }

    /// Kills and reaps the child.
    static func killed(_ pid: pid_t, output: [UInt8], ending: Ending) -> ChildRun {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = retryingInterrupts { waitpid(pid, &status, 0) }
        return ChildRun(output: output, ending: ending)
    }
}
