#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract
import CSwitchbackSystem
import SwitchbackFiles

/// Makes the app's data readable by the previous slot before a switch to it, by running
/// the current build's downgrade entry point (`switchback_downgrade`) in a process of its
/// own: `bin/launcher` started with `SWITCHBACK_DOWNGRADE` set, which loads the current slot
/// and nothing else. Only the newer code knows how to undo its own migrations, and two
/// builds never share a process.
///
/// Every switch to the previous slot goes through here first: `rollbackctl rollback` and
/// `mark-bad`, an applied remote directive, the launcher's automatic rollback and the
/// supervisor's. Each step the app undid becomes a history event (`revert`, `restore`,
/// `archive`) with the switch's source.
public struct DataDowngrade: Sendable {
    /// Set in the child's environment to `run` or `force`: the launcher then downgrades
    /// instead of running the app (see `Launcher.runDowngrade`).
    public static let modeVariable = "SWITCHBACK_DOWNGRADE"
    /// The child's exit code when the launcher itself could not load the current slot.
    static let unavailableExitCode: Int32 = Launcher.failureExitCode

    /// How one migration step was undone.
    public struct UndoneStep: Sendable, Equatable {
        /// `revert`, `restore` or `archive`.
        public var method: SwitchHistoryEvent.Kind
        /// The migration step's name.
        public var step: String
        /// Where the replaced data set now lives (restore, archive).
        public var archive: String?
    }

    /// What a downgrade came to.
    public enum Status: Sendable, Equatable {
        /// The previous slot can read the data now (or already could).
        case done
        /// Nothing changed: a step can be neither reverted nor restored (use `force`).
        case refused
        /// A revert or restore failed part-way; the switch must not happen.
        case failed
        /// The current slot could not be loaded to run its downgrade.
        case unavailable
    }

    public struct Outcome: Sendable, Equatable {
        public var status: Status
        public var undone: [UndoneStep] = []
        /// The data's reader floor after the downgrade, as the app reported it ("" for none).
        public var readerFloor: String?
        /// The app's or the launcher's sentence, when it refused or failed (or a note).
        public var message: String?

        public init(status: Status, undone: [UndoneStep] = [], readerFloor: String? = nil, message: String? = nil) {
            self.status = status
            self.undone = undone
            self.readerFloor = readerFloor
            self.message = message
        }

        /// Whether the switch to the previous slot may go ahead.
        public var allowsSwitch: Bool { status == .done }
    }

    public let bundleRoot: String
    public let manifest: Manifest
    public let directory: StateDirectory

    public init(bundleRoot: String, manifest: Manifest, directory: StateDirectory) {
        self.bundleRoot = bundleRoot
        self.manifest = manifest
        self.directory = directory
    }

    var launcherPath: String { bundleRoot + "/bin/launcher" }

    /// Runs the current build's downgrade to the previous slot's version, waits for it,
    /// and records what it undid in the history (with `source` and `reason`).
    public func run(force: Bool, source: ChoiceSource, reason: String?) -> Outcome {
        var outcome = checked(spawnChild(force: force))
        if outcome.status == .done || outcome.status == .failed {
            record(outcome.undone, source: source, reason: reason)
        }
        if outcome.status != .done, outcome.message == nil {
            outcome.message = "the current build's downgrade ended without saying why."
        }
        return outcome
    }

    /// Takes the app's word only when it adds up: a downgrade that says it is done while the
    /// reader floor it reports is still above the previous version did not do its job.
    func checked(_ outcome: Outcome) -> Outcome {
        guard outcome.status == .done, let floor = outcome.readerFloor, !floor.isEmpty,
              DottedVersion.compare(floor, manifest.previous.version) > 0 else { return outcome }
        var failed = outcome
        failed.status = .failed
        failed.message = "the current build's downgrade said it was done, but the data's reader floor is still \(floor)"
        return failed
    }

    /// One sentence for a switch that may not go ahead: what was found, and what to do.
    public func refusal(_ outcome: Outcome, command: String) -> String {
        Self.refusal(outcome, command: command, manifest: manifest)
    }

    /// `refusal(_:command:)` for `manifest`'s builds.
    public static func refusal(_ outcome: Outcome, command: String, manifest: Manifest) -> String {
        let previous = manifest.previous.version, current = manifest.current.version
        let what = outcome.message.map { $0.hasSuffix(".") ? $0 : $0 + "." } ?? ""
        switch outcome.status {
        case .done:
            return ""
        case .refused:
            return "The previous build (\(previous)) cannot read the data the current build (\(current)) left, and it cannot be converted back: \(what) Run '\(command) --force' to archive the data and roll back with it empty, or stay on \(current)."
        case .failed:
            return "Converting the data back for the previous build (\(previous)) failed: \(what) Nothing was switched; fix the cause and run '\(command)' again (it resumes where it stopped)."
        case .unavailable:
            return "The current build (\(current)) could not be loaded to convert its data back for \(previous): \(what) Run '\(command) --force' to switch without converting the data."
        }
    }

    // MARK: - The child

    func spawnChild(force: Bool) -> Outcome {
        // Checked as a slot is, and run from the checked descriptor (through procfs), never
        // by its name again: it runs as whoever runs rollbackctl or the supervisor, root included.
        let program: ProgramFile
        do { program = try ProgramFile.open(launcherPath, what: "launcher program") } catch {
            if error.code == .fileNotFound {
                return Outcome(status: .unavailable, message: "\(launcherPath) is missing; rebuild the bundle with scripts/bundle")
            }
            return Outcome(status: .unavailable, message: error.clause)
        }
        defer { withExtendedLifetime(program) {} }
        let pid: pid_t, output: Int32
        switch ChildRun.spawn(program, arguments: [launcherPath], environment: childEnvironment(force: force)) {
        case .success(let child): (pid, output) = child
        case .failure(let failure) where failure.inPipe:
            return Outcome(status: .unavailable, message: "cannot create a pipe: \(errorString(failure.errno))")
        case .failure(let failure):
            return Outcome(status: .unavailable, message: "cannot start \(launcherPath): \(errorString(failure.errno))")
        }
        let report = (try? FileSystem.readToEnd(output, path: "the downgrade's report")) ?? []
        close(output)
        var status: Int32 = 0
        _ = retryingInterrupts { waitpid(pid, &status, 0) }
        var outcome = Self.parse(report)
        if switchback_exited(status) == 0 {
            outcome.status = .failed
            outcome.message = "the downgrade process was killed by signal \(switchback_term_signal(status)); the next attempt finishes or undoes what it began"
            return outcome
        }
        switch switchback_exit_code(status) {
        case SWITCHBACK_DOWNGRADE_DONE: outcome.status = .done
        case SWITCHBACK_DOWNGRADE_REFUSED: outcome.status = .refused
        case Self.unavailableExitCode: outcome.status = .unavailable
        default: outcome.status = .failed
        }
        return outcome
    }

    func childEnvironment(force: Bool) -> [String] {
        let dropped = [Self.modeVariable, "SWITCHBACK_SLOT", "SWITCHBACK_STATE_DIR", Launcher.failureVariable,
                       Supervisor.parentVariable, Supervisor.reportVariable]
        var result: [String] = []
        var index = 0
        while let entry = environ[index] {
            index += 1
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if !dropped.contains(name) { result.append(text) }
        }
        result.append("\(Self.modeVariable)=\(force ? "force" : "run")")
        result.append("SWITCHBACK_STATE_DIR=\(directory.path)")
        return result
    }

    /// Parses the child's report (see `SwitchbackDowngradeFunction` in switchback.h).
    static func parse(_ bytes: [UInt8]) -> Outcome {
        var outcome = Outcome(status: .failed)
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let text = String(decoding: line, as: UTF8.self)
            guard let equals = text.firstIndex(of: "=") else { continue }
            let key = text[..<equals], value = String(text[text.index(after: equals)...])
            switch key {
            case "undone":
                let fields = value.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard fields.count >= 2, let kind = SwitchHistoryEvent.Kind(rawValue: fields[0]),
                      kind == .revert || kind == .restore || kind == .archive else { continue }
                let archive = fields.count >= 3 && !fields[2].isEmpty ? fields[2] : nil
                outcome.undone.append(UndoneStep(method: kind, step: fields[1], archive: archive))
            case "reader_floor":
                outcome.readerFloor = value
            case "message":
                // The app's sentence, printed in the refusal (stderr, rollbackctl's output).
                outcome.message = OutsideText(value, limit: Limits.storedReasonBytes).text
            default:
                continue
            }
        }
        return outcome
    }

    // MARK: - History

    func record(_ undone: [UndoneStep], source: ChoiceSource, reason: String?) {
        guard !undone.isEmpty else { return }
        let previous = manifest.previous.version
        let now = currentUnixTime()
        let events = undone.map { step -> SwitchHistoryEvent in
            var what: String
            switch step.method {
            case .revert: what = "step \(step.step) reverted so \(previous) can read the data"
            case .restore: what = "snapshot taken before step \(step.step) restored so \(previous) can read the data"
            default: what = "data of step \(step.step) archived (forced: it could not be undone)"
            }
            if let archive = step.archive { what += "; the newer data is archived at \(archive)" }
            if let reason { what += " (for: \(reason))" }
            return SwitchHistoryEvent(time: now, kind: step.method, from: .current, to: .previous, source: source, reason: what)
        }
        try? FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            let log = HistoryLog(path: directory.historyPath)
            for event in events { try log.append(event) }
        }
    }
}
