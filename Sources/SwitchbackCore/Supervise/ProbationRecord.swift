#if canImport(Glibc)
import Glibc
#endif

/// The last probation (bake window) of a build, as the supervisor keeps it in `probation` in
/// the state directory: which build, when its window ends, what state it is in, and each
/// check's last measurement. The supervisor is its only writer (atomically replaced);
/// `rollbackctl status` and the metrics read it, and a supervisor restarted during a window
/// resumes from it. A damaged record is ignored (with a warning where a reader says one),
/// never a crash.
public struct ProbationRecord: Sendable, Equatable {
    /// Where a probation is. `baking` is the only state in which the analyzer runs;
    /// `held` and `inconclusive` wait for an operator's `promote` or `abort`. A verdict's
    /// state is its word (`AnalysisVerdict.word`).
    public enum State: String, Sendable, Equatable, CaseIterable, Codable {
        case baking, passed, failed, held, inconclusive, promoted, aborted
        /// A dry run ended with a verdict that would have rolled back, or held: nothing was done.
        case wouldRollBack = "would_roll_back"
        case wouldHold = "would_hold"

        /// The state a verdict leaves.
        public init(_ verdict: AnalysisVerdict) {
            self.init(rawValue: verdict.word)!
        }

        /// Whether `rollbackctl promote` / `abort` can still act on it.
        public var isOpen: Bool { self == .baking || self == .held || self == .inconclusive }
    }

    /// One check's last measurement: its phase (`successful`, `failed`, `inconclusive`,
    /// `error`) and the sentence the analyzer wrote.
    public struct CheckResult: Sendable, Equatable {
        public var name: String
        public var phase: String
        public var sentence: String
        /// Unix milliseconds.
        public var at: Int64

        public init(name: String, phase: String, sentence: String, at: Int64) {
            self.name = name
            self.phase = phase
            self.sentence = sentence
            self.at = at
        }
    }

    /// With `analysis.baseline=true`: the build the window compares with, or why there is none.
    public enum Comparison: Sendable, Equatable {
        /// The build a start-first switch replaced serves beside the new one (the canary).
        case beside(baselinePID: Int32, canaryPID: Int32, slot: BuildSlot, version: String, build: String)
        /// No build serves beside it (a stop-first switch, the first start): the absolute checks judge.
        case none(String)

        /// The clause the supervisor and the history add to "on probation for N s".
        public var clause: String {
            switch self {
            case .beside(let pid, _, let slot, let version, _):
                return ", compared with the \(slot.rawValue) build (\(version), pid \(pid)) serving beside it"
            case .none(let why):
                return ", judged by its absolute checks only: no baseline, because \(why)"
            }
        }
    }

    public var slot: BuildSlot
    public var version: String
    /// The build's SHA-256.
    public var build: String
    /// Unix milliseconds.
    public var startedAt: Int64
    public var endsAt: Int64
    public var state: State
    /// The verdict's sentence (or why the probation ended as it did); nil while baking.
    public var result: String?
    /// The checks' last measurements, in the order they first reported.
    public var checks: [CheckResult]
    /// With `analysis.baseline=true`, what the window compares with; nil otherwise.
    public var comparison: Comparison?

    public init(slot: BuildSlot, version: String, build: String, startedAt: Int64, endsAt: Int64,
                state: State = .baking, result: String? = nil, checks: [CheckResult] = []) {
        self.slot = slot
        self.version = version
        self.build = build
        self.startedAt = startedAt
        self.endsAt = endsAt
        self.state = state
        self.result = result
        self.checks = checks
    }

    /// The window's length in whole seconds.
    public var windowSeconds: Int64 { max(0, (endsAt - startedAt) / 1000) }

    /// Records `result` as the check's last measurement (replacing the one before).
    public mutating func update(_ result: CheckResult) {
        if let index = checks.firstIndex(where: { $0.name == result.name }) {
            checks[index] = result
        } else {
            checks.append(result)
        }
    }

    public static func path(in directory: StateDirectory) -> String { directory.path + "/probation" }
    /// Where `rollbackctl promote` / `abort` leave their request for the supervisor.
    public static func requestPath(in directory: StateDirectory) -> String { directory.path + "/probation.request" }
    /// The operator's override of `analysis.*` keys (`rollbackctl bake-window`).
    public static func overridePath(in directory: StateDirectory) -> String { directory.path + "/analysis.override" }

    /// Writes the record atomically (durable: a supervisor restarted after a crash resumes it).
    public func save(in directory: StateDirectory) throws(SwitchbackError) {
        try FileSystem.replace(Self.path(in: directory), with: serialized(), durable: true)
    }

    /// The file's text.
    public func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("format", "1")
        text.append("slot", slot.rawValue)
        text.append("version", version)
        text.append("build", build)
        text.append("started_at", String(startedAt))
        text.append("ends_at", String(endsAt))
        text.append("state", state.rawValue)
        if let result { text.append("result", Limits.truncated(result)) }
        switch comparison {
        case .beside(let baselinePID, let canaryPID, let slot, let version, let build)?:
            text.append("baseline", "\(slot.rawValue) \(baselinePID) \(canaryPID) \(build)")
            text.append("baseline.version", version)
        case .none(let why)?:
            text.append("baseline.none", Limits.truncated(why))
        case nil:
            break
        }
        for check in checks {
            text.append("check.\(check.name)", "\(check.phase) \(Limits.truncated(check.sentence))")
            text.append("check.\(check.name).at", String(check.at))
        }
        return text.serialized()
    }

    /// The record in `directory`: nil when there is none; throws `.stateInvalid` (a sentence
    /// naming the file) when it is damaged.
    public static func load(in directory: StateDirectory) throws(SwitchbackError) -> ProbationRecord? {
        let path = path(in: directory)
        guard let bytes = try FileSystem.read(path, limit: 64 << 10) else { return nil }
        return try parse(bytes, path: path)
    }

    /// Parses the file. Throws `.stateInvalid` when the format is not 1, a required key is
    /// missing, the slot or state is unknown, the build is not a SHA-256, or a time is
    /// outside `ValueRange.unixTime` (as milliseconds). Check lines that do not read are skipped.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> ProbationRecord {
        func invalid(_ what: String) -> SwitchbackError {
            SwitchbackError(.stateInvalid, "The probation record \(path) \(what); it is ignored until the supervisor writes it again.", path: path)
        }
        let text = try KeyValueText.parse(bytes, describing: "The probation record \(path)")
        guard text["format"] == "1" else { throw invalid("is not format 1") }
        guard let slot = text["slot"].flatMap(BuildSlot.init(rawValue:)) else { throw invalid("names no slot (current or previous)") }
        guard let build = text["build"], BuildIdentity.isSHA256(build) else { throw invalid("has no build SHA-256") }
        guard let state = text["state"].flatMap(State.init(rawValue:)) else { throw invalid("has no known state") }
        let milliseconds = ValueRange.unixTime.lowerBound...(ValueRange.unixTime.upperBound * 1000)
        func time(_ key: String) throws(SwitchbackError) -> Int64 {
            guard let value = text[key].flatMap({ Int64($0) }), milliseconds.contains(value) else { throw invalid("has no valid \(key)") }
            return value
        }
        let startedAt = try time("started_at"), endsAt = try time("ends_at")
        guard endsAt >= startedAt else { throw invalid("ends before it started") }
        var record = ProbationRecord(slot: slot, version: text["version"] ?? "", build: build, startedAt: startedAt, endsAt: endsAt,
                                     state: state, result: text["result"])
        if let words = text["baseline"]?.split(separator: " "), words.count == 4, let slot = BuildSlot(rawValue: String(words[0])),
           let baselinePID = Int32(words[1]), let canaryPID = Int32(words[2]) {
            record.comparison = .beside(baselinePID: baselinePID, canaryPID: canaryPID, slot: slot,
                                        version: text["baseline.version"] ?? "", build: String(words[3]))
        } else if let why = text["baseline.none"] {
            record.comparison = .none(why)
        }
        for index in 0..<text.count {
            let key = text.key(at: index)
            guard key.hasPrefix("check."), !key.hasSuffix(".at") else { continue }
            let name = String(key.dropFirst(6))
            guard !name.isEmpty else { continue }
            let value = text.value(at: index)
            let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            let at = text["check.\(name).at"].flatMap { Int64($0) }.flatMap { milliseconds.contains($0) ? $0 : nil } ?? 0
            record.update(CheckResult(name: name, phase: String(parts[0]), sentence: parts.count > 1 ? String(parts[1]) : "", at: at))
        }
        return record
    }
}
