#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem
import SwitchbackFiles

/// The probation's I/O: the analyzer process (`bin/rollbackctl-remote analyze`, checked like
/// the sync program, fed on stdin, read on stdout, reaped), the probation record, the
/// operator's requests and bake-window override. Bundles without `analysis.*` settings do
/// none of it: `Analyzer.isConfigured` is one dictionary lookup of the parsed manifest.
extension Supervisor {
    /// The running analyzer: its pid, the pipe ends the supervisor holds, and the reader of
    /// its frames (`AnalyzerMessage`), which holds what is not a whole frame yet.
    struct Analyzer {
        var pid: pid_t
        var output: Int32
        var input: Int32
        var frames = AnalyzerFrameReader()
        var gaveVerdict = false

        /// Whether the manifest configures analysis at all (`analysis.window_s` or `analysis.checks`).
        static func isConfigured(_ manifest: Manifest) -> Bool {
            manifest.settings["analysis.window_s"] != nil || manifest.settings["analysis.checks"] != nil
        }

        /// The sentence for a manifest whose `analysis.*` settings the analyzer would refuse
        /// (`AnalysisSpec.parse`), or nil; nothing is parsed for a manifest without them. The
        /// supervisor refuses to start on it rather than run a probation that cannot judge.
        static func problem(in manifest: Manifest) -> String? {
            guard isConfigured(manifest) else { return nil }
            do { _ = try AnalysisSpec.parse(AnalysisSpec.settings(in: manifest.settings)) } catch {
                return "The manifest's analysis settings are refused: \(error.message) Rebuild the bundle with switchback-bundle --analysis FILE."
            }
            return nil
        }

        /// The bake window from `analysis.window_s` in `settings` (whole seconds; 0 when absent or not a number).
        static func windowSeconds(_ value: String?) -> Int {
            guard let value, let seconds = Int(value), ValueRange.duration.contains(seconds) else { return 0 }
            return seconds
        }
    }

    /// The bake window now: the operator's override (`rollbackctl bake-window`) when it sets
    /// one, else the manifest's.
    func bakeWindowSeconds() -> Int {
        if let bytes = try? FileSystem.read(ProbationRecord.overridePath(in: directory), limit: 64 << 10),
           let text = try? KeyValueText.parse(bytes, describing: "analysis.override"), let value = text["analysis.window_s"] {
            return Analyzer.windowSeconds(value)
        }
        return Analyzer.windowSeconds(manifest.settings["analysis.window_s"])
    }

    /// The record at the start (to resume a window a stopped supervisor left open); a damaged
    /// one is said once and ignored.
    func loadProbationRecord() -> ProbationRecord? {
        do { return try ProbationRecord.load(in: directory) } catch {
            Launcher.printError("launcher: supervisor: Warning: \(error.message)")
            return nil
        }
    }

    /// Starts the analyzer for `record`; a program that is missing or refused, or a spawn
    /// that fails, is an inconclusive probation with the sentence, never a rollback.
    func startAnalyzer(_ record: ProbationRecord) {
        stopAnalyzer()
        let program: ProgramFile
        do { program = try ProgramFile.open(bundleRoot + "/bin/rollbackctl-remote", what: "rollbackctl-remote program") } catch {
            send(.analyzerExited("no analyzer ran: \(error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message)"))
            return
        }
        // Writing to an analyzer that has just exited must not kill the supervisor.
        signal(SIGPIPE, SIG_IGN)
        var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
        guard switchback_pipe_cloexec(&toChild) == 0 else {
            send(.analyzerExited("no analyzer ran: pipe failed: \(errorString(errno))"))
            return
        }
        guard switchback_pipe_cloexec(&fromChild) == 0 else {
            close(toChild[0])
            close(toChild[1])
            send(.analyzerExited("no analyzer ran: pipe failed: \(errorString(errno))"))
            return
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        let arguments = [program.path, "analyze", "--state-dir", directory.path,
                         "--slot", record.slot.rawValue, "--build", record.build, "--version", record.version,
                         "--ends-at", String(record.endsAt)]
            + Self.comparisonArguments(record.comparison)
        var environment = Self.inheritedEnvironment()
        environment.removeAll { $0.hasPrefix("NOTIFY_SOCKET=") }
        var pid: pid_t = 0
        let result = withExtendedLifetime(program) {
            withCStrings(arguments) { argv in
                withCStrings(environment) { envp in
                    withChildSpawnAttributes { posix_spawn(&pid, program.procPath, &actions, $0, argv, UnsafeMutablePointer(mutating: envp)) }
                }
            }
        }
        close(toChild[0])
        close(fromChild[1])
        guard result == 0 else {
            close(toChild[1])
            close(fromChild[0])
            send(.analyzerExited("no analyzer ran: \(program.path) could not be started (\(errorString(result)))"))
            return
        }
        _ = fcntl(fromChild[0], F_SETFL, fcntl(fromChild[0], F_GETFL) | O_NONBLOCK)
        analyzer = Analyzer(pid: pid, output: fromChild[0], input: toChild[1])
    }

    /// What the analyzer is told of the baseline: the two children's pids, or why there is none.
    static func comparisonArguments(_ comparison: ProbationRecord.Comparison?) -> [String] {
        switch comparison {
        case .beside(let baselinePID, let canaryPID, let slot, let version, let build)?:
            return ["--baseline-pid", String(baselinePID), "--canary-pid", String(canaryPID),
                    "--baseline-version", version, "--baseline-slot", slot.rawValue, "--baseline-build", build]
        case .none(let why)?:
            return ["--no-baseline", why]
        case nil:
            return []
        }
    }

    /// Stops the analyzer: its stdin closes (it exits at once) and SIGTERM follows; it is
    /// reaped like any child, its verdict no longer wanted.
    func stopAnalyzer() {
        guard let current = analyzer else { return }
        analyzer = nil
        close(current.input)
        close(current.output)
        kill(current.pid, SIGTERM)
    }

    /// A frame on the analyzer's stdin; a write that fails is left to the analyzer's exit.
    func tellAnalyzer(_ message: AnalyzerMessage) {
        guard let current = analyzer else { return }
        let frame = message.frame
        _ = frame.withUnsafeBytes { write(current.input, $0.baseAddress, $0.count) }
    }

    /// Reads what the analyzer wrote and turns each whole frame into an event. A malformed
    /// frame is said once; the analyzer is stopped and the probation ends inconclusive (its
    /// output can no longer be told apart from what it quoted), never with a verdict read
    /// out of it.
    func readAnalyzer() {
        guard var current = analyzer else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var ended = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(current.output, $0.baseAddress, $0.count) }
            if count > 0 {
                current.frames.append(buffer[0..<count])
                continue
            }
            if count == 0 || (errno != EAGAIN && errno != EINTR) { ended = true }
            if count < 0 && errno == EINTR { continue }
            break
        }
        var messages: [AnalyzerMessage] = []
        var malformed: AnalyzerFrameReader.Malformed?
        while true {
            do {
                guard let payload = try current.frames.next() else { break }
                if let message = AnalyzerMessage(payload: payload) { messages.append(message) }
            } catch {
                malformed = error
                break
            }
        }
        for message in messages { if case .verdict = message { current.gaveVerdict = true } }
        analyzer = current
        for message in messages { analyzerSaid(message) }
        if let malformed, let still = analyzer, still.pid == current.pid, !still.gaveVerdict {
            Launcher.printError("launcher: supervisor: the analyzer (pid \(current.pid)) wrote a malformed frame: \(malformed.clause); it is stopped and nothing more it wrote is read.")
            stopAnalyzer()
            send(.analyzerExited("the analyzer wrote a malformed frame (\(malformed.clause))"))
            return
        }
        if ended, let still = analyzer, still.pid == current.pid {
            // Its stdout closed: it is done (or dying); its exit is reaped like any child's.
            close(still.output)
            analyzer?.output = -1
        }
    }

    /// One message of the analyzer: a measurement or the verdict; a message for the analyzer
    /// (the supervisor's own kinds) coming back is ignored.
    func analyzerSaid(_ message: AnalyzerMessage) {
        switch message {
        case .measurement(let check, let phase, let sentence):
            send(.analysisMeasured(check: check, phase: phase, sentence: sentence.text))
        case .verdict(let word, let sentence):
            send(.analysisVerdict(AnalysisVerdict(word: word, sentence: sentence.text)
                ?? .inconclusive("the analyzer gave a verdict this supervisor does not know ('\(word)'): \(sentence.text)")))
        case .appFailures, .appBad:
            break
        }
    }

    /// The analyzer was reaped: whatever it still wrote is read, and an exit without a
    /// verdict ends the probation inconclusive.
    func analyzerExited(status: Int32) {
        guard let current = analyzer else { return }
        if current.output >= 0 { readAnalyzer() }
        guard let done = analyzer, done.pid == current.pid else { return }
        analyzer = nil
        close(done.input)
        if done.output >= 0 { close(done.output) }
        guard !done.gaveVerdict else { return }
        let how = switchback_exited(status) != 0
            ? (switchback_exit_code(status) == 78 ? "its analysis settings were refused (exit 78; see the lines above)" : "code \(switchback_exit_code(status))")
            : "signal \(switchback_term_signal(status))"
        send(.analyzerExited("the analyzer exited without a verdict (\(how))"))
    }

    /// `probation.request` from `rollbackctl promote` / `abort`: read, removed, acted on. Looked
    /// at only while a probation is open.
    func consumeProbationRequest() {
        guard trusted, machine.probation.record?.state.isOpen == true else { return }
        let path = ProbationRecord.requestPath(in: directory)
        guard let bytes = try? FileSystem.read(path, limit: 4096) else { return }
        try? FileSystem.remove(path)
        guard let request = SupervisorMachine.ProbationRequest(line: String(decoding: bytes, as: UTF8.self)) else {
            Launcher.printError("launcher: supervisor: the probation request in \(path) does not read as 'promote BUILD' or 'abort BUILD'; it was removed.")
            return
        }
        send(.probationRequest(request))
    }

    /// The override file changed: the machine hears the bake window a new probation gets.
    func noticeBakeWindow() {
        guard trusted, hasAnalysis else { return }
        let fingerprint = (try? FileSystem.status(ProbationRecord.overridePath(in: directory))).flatMap { $0.map(FileFingerprint.init) }
        guard fingerprint != overrideSeen else { return }
        overrideSeen = fingerprint
        send(.bakeWindow(seconds: bakeWindowSeconds()))
    }

    func recordProbation(_ record: ProbationRecord) {
        guard trusted else { return }
        do { try record.save(in: directory) } catch {
            Launcher.printError("launcher: supervisor: the probation record could not be written (\(error.message)).")
        }
        Observer.refreshMetrics(in: directory, manifest: manifest)
    }

    /// The build passed its window (or was promoted): its good verdict is kept, with the note.
    func markGoodAfterProbation(slot: BuildSlot, build: String, note: String) {
        guard trusted else { return }
        let identity = BuildIdentity(sha256: build, version: manifest[slot].version)
        do {
            try HealthStore(directory: directory).update(durable: true) { (record: inout HealthRecord) throws(SwitchbackError) in
                record.mark(identity, .good, tries: manifest.trialTries, note: note, at: currentUnixTime())
            }
        } catch {
            Launcher.printError("launcher: supervisor: the \(slot.rawValue) build \(note), but its good mark could not be recorded (\(error.message)).")
        }
        Observer.refreshMetrics(in: directory, manifest: manifest)
    }
}
