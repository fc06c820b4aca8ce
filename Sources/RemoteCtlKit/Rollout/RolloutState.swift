import SwitchbackCore

/// A rollout's progress, kept in the `--state` file (KeyValueText) so that a rollout killed at
/// any moment resumes where it was when run again. The driver writes it atomically and
/// fsynced before and after every publication, with the serial and the SHA-256 of the
/// directive file in flight, so a re-run can tell whether that file reached the disk.
struct RolloutState: Sendable, Equatable {
    /// The format this version writes and reads.
    static let format = 1

    /// The highest serial a rollout follows: serials are the time in seconds, which reaches
    /// this in the year 2286. Above it (a crafted progress file near `Int64.max`, say) a
    /// rollout would publish serials every install accepts, after which every time-based
    /// serial is a replay there; the progress file or directive file is refused instead.
    static let highestFollowableSerial: UInt64 = 9_999_999_999

    /// Where the step in hand is.
    enum Phase: String, Sendable, Equatable {
        /// The step is next and nothing of it is published yet.
        case ready
        /// The step waits for an operator's `--approve` before it is published.
        case awaitingApproval = "awaiting_approval"
        /// The step's directive is signed (serial, SHA-256 recorded) and being written; it may
        /// or may not be on disk.
        case publishing
        /// The step's directive is on disk; its pause and analysis run.
        case analysing
        /// The step's analysis was inconclusive: it waits for `--approve` or `--abort`.
        case inconclusive
        /// A check of the step's analysis with `on_failure=hold` failed: it waits for
        /// `--approve` or `--abort`, as an inconclusive one does.
        case held
        /// The rollback directive is signed and being written.
        case rollingBack = "rolling_back"
        /// The rollback directive is on disk: the rollout is over.
        case rolledBack = "rolled_back"
        /// Every step passed: the rollout is over.
        case completed
    }

    /// Why a rollback was published.
    enum RollbackCause: String, Sendable, Equatable {
        /// A step's analysis failed.
        case failed
        /// An operator ran the rollout with `--abort`.
        case aborted
    }

    /// What is kept of each published step.
    struct StepRecord: Sendable, Equatable {
        var serial: UInt64
        var publishedAt: Int64
        /// The analysis's sentence, once judged.
        var result: String?
    }

    var version: String
    var steps: [Int]
    /// The step in hand, 1-based.
    var step: Int
    var phase: Phase
    /// The serial of the directive in flight, or of the last one published (0: none yet).
    var serial: UInt64 = 0
    /// The SHA-256 (hex) of the directive file in flight or last published.
    var directiveSHA256: String = ""
    /// When the state was last written (unix seconds).
    var updatedAt: Int64 = 0
    /// The last sentence that explains the phase (a verdict, a wait, a rollback's reason).
    var result: String?
    /// Each step's directive, by 1-based step.
    var records: [Int: StepRecord] = [:]
    /// When the pause in hand ends (Unix milliseconds), while the phase is `analysing`.
    var pauseEndsAt: Int64?
    /// Set once a rollback is signed.
    var rollbackCause: RollbackCause?
    var rollbackPublishedAt: Int64?

    /// A rollout that has published nothing yet.
    static func fresh(_ plan: RolloutPlan) -> RolloutState {
        RolloutState(version: plan.version, steps: plan.steps, step: 1, phase: .ready)
    }

    /// The percentage of the step in hand.
    var percent: Int { steps[step - 1] }

    /// Whether the rollback in hand was signed (`serial` and `directiveSHA256` are its own):
    /// a rollback is decided and written down first with the serial of the last directive
    /// published (a step's, in `records`, or 0), and signed just before it is written.
    var isRollbackSigned: Bool {
        (phase == .rollingBack || phase == .rolledBack) && serial != 0 && !records.values.contains { $0.serial == serial }
    }

    /// Whether nothing more will happen.
    var isOver: Bool { phase == .rolledBack || phase == .completed }

    /// The file's text.
    func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("format", String(Self.format))
        text.append("version", version)
        text.append("steps", steps.map(String.init).joined(separator: ","))
        text.append("step", String(step))
        text.append("phase", phase.rawValue)
        text.append("serial", String(serial))
        text.append("directive_sha256", directiveSHA256)
        text.append("updated_at", String(updatedAt))
        if let result { text.append("result", result) }
        for index in records.keys.sorted() {
            let record = records[index]!
            text.append("step.\(index).serial", String(record.serial))
            text.append("step.\(index).published_at", String(record.publishedAt))
            if let result = record.result { text.append("step.\(index).result", result) }
        }
        if let pauseEndsAt, phase == .analysing { text.append("pause.ends_at", String(pauseEndsAt)) }
        if let rollbackCause { text.append("rollback.cause", rollbackCause.rawValue) }
        if let rollbackPublishedAt { text.append("rollback.published_at", String(rollbackPublishedAt)) }
        return [UInt8]("# Progress of rollbackctl-remote rollout; do not edit.\n".utf8) + text.serialized()
    }

    /// Reads a state file's bytes. Throws a sentence naming the file when it is not one.
    static func parse(_ bytes: [UInt8], file: String) throws(RolloutStateError) -> RolloutState {
        func fail(_ what: String) -> RolloutStateError {
            RolloutStateError("The rollout state file \(file) \(what); it is not one this version wrote: move it away to start the rollout afresh, or restore the right file.")
        }
        let text: KeyValueText
        do { text = try KeyValueText.parse(bytes, describing: file) } catch { throw fail("cannot be read (\(error.message))") }
        guard text["format"] == String(Self.format) else { throw fail("has format \(text["format"] ?? "(none)")") }
        guard let version = text["version"], !version.isEmpty else { throw fail("has no version") }
        let steps = (text["steps"] ?? "").split(separator: ",").compactMap { Int($0) }
        guard !steps.isEmpty else { throw fail("has no steps") }
        guard let step = text["step"].flatMap(Int.init), (1...steps.count).contains(step) else { throw fail("has a bad step") }
        guard let phase = text["phase"].flatMap(Phase.init(rawValue:)) else { throw fail("has a bad phase \(text["phase"] ?? "(none)")") }
        guard let serial = text["serial"].flatMap(UInt64.init) else { throw fail("has a bad serial") }
        guard serial <= highestFollowableSerial else {
            throw fail("has serial \(serial), above any time in seconds (\(highestFollowableSerial) is in the year 2286), so no time-based serial could follow it and every install that took the next one would refuse all later ones as replays")
        }
        var state = RolloutState(version: version, steps: steps, step: step, phase: phase, serial: serial,
                                 directiveSHA256: text["directive_sha256"] ?? "", updatedAt: text["updated_at"].flatMap(Int64.init) ?? 0,
                                 result: text["result"])
        for index in 1...steps.count {
            guard let serial = text["step.\(index).serial"].flatMap(UInt64.init),
                  let at = text["step.\(index).published_at"].flatMap(Int64.init) else { continue }
            state.records[index] = StepRecord(serial: serial, publishedAt: at, result: text["step.\(index).result"])
        }
        if let cause = text["rollback.cause"] {
            guard let value = RollbackCause(rawValue: cause) else { throw fail("has a bad rollback.cause \(cause)") }
            state.rollbackCause = value
        }
        state.rollbackPublishedAt = text["rollback.published_at"].flatMap(Int64.init)
        state.pauseEndsAt = text["pause.ends_at"].flatMap(Int64.init)
        return state
    }
}

/// A rollout state file that cannot be used: one sentence (exit 1).
struct RolloutStateError: Error, Equatable, Sendable {
    var message: String
    init(_ message: String) { self.message = message }
}
