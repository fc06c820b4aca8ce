import SwitchbackCore

/// What a stepped fleet rollout does (`rollbackctl-remote rollout --plan FILE`): the release,
/// the percentages it is published to in turn, the pause after each (the analysis window),
/// the steps that wait for an operator, and the `analysis.*` checks judged over each pause.
///
/// The file is KeyValueText, like the manifest:
///
///     rollout.version=1.3.0
///     rollout.steps=1,10,50,100
///     rollout.pause_s=60            (or one per step: 60,10m,30m,0)
///     rollout.approval=50
///     rollout.expires_in=7d
///     analysis.checks=rollbacks
///     analysis.check.rollbacks.kind=prometheus
///     ...
///
/// Parsing checks everything before anything is published: a bad plan is one sentence that
/// names the key (`RolloutPlanError`, exit 78).
struct RolloutPlan: Sendable, Equatable {
    /// The release: the current-slot version every directive of the rollout applies to.
    var version: String
    /// The percentages, strictly increasing, each 1...100.
    var steps: [Int]
    /// The pause after each step is published, one per step: the window its analysis runs
    /// over (`rollout.pause_s`: one duration for every step, or one per step, as Argo's
    /// `pause: {duration}` steps).
    var pauses: [Int]
    /// The percentages that wait for an operator's `--approve` before they are published.
    var approvalSteps: Set<Int>
    /// How long each directive may be acted on after it is signed.
    var expiresInSeconds: Int
    /// The app the directives are for (`rollout.app_id`; nil: the bundle's).
    var appID: String?
    /// `$previous_version` in queries (`rollout.previous_version`; nil: the bundle's previous slot).
    var previousVersion: String?
    /// Every `analysis.*` key of the plan, as written.
    var analysis: [String: String]
    /// The checks judged over each pause (the engine's reading of `analysis`, the pause as its
    /// window); nil when the plan has none and a pause is only a wait.
    var spec: AnalysisSpec? = nil
    /// The plan's `hooks.*`: told of each step (`RolloutHooks`); nil when none.
    var hooks: HookSettings? = nil

    /// The keys a plan may hold besides `analysis.*`.
    static let keys: Set<String> = [
        "rollout.version", "rollout.steps", "rollout.pause_s", "rollout.approval", "rollout.expires_in",
        "rollout.app_id", "rollout.previous_version",
    ]

    /// The check kinds a fleet rollout can run: the others need the install's own host.
    static let fleetKinds: Set<String> = ["prometheus"]

    /// Parses a plan file's text. Throws `RolloutPlanError` naming the first bad key.
    static func parse(_ text: KeyValueText, file: String) throws(RolloutPlanError) -> RolloutPlan {
        func fail(_ message: String) -> RolloutPlanError { RolloutPlanError("The rollout plan \(file) \(message)") }
        var settings: [String: String] = [:]
        for index in 0..<text.count {
            let key = text.key(at: index)
            if settings[key] != nil { throw fail("sets \(key) twice; keep one line.") }
            if !key.hasPrefix("analysis.") && !key.hasPrefix("hooks.") && !keys.contains(key) {
                throw fail("has an unknown key \(key); the keys are \(keys.sorted().joined(separator: ", ")), analysis.* and hooks.*.")
            }
            settings[key] = text.value(at: index)
        }
        guard let version = settings["rollout.version"], !version.allSatisfy(\.isWhitespace) else {
            throw fail("has no rollout.version (the current-slot version to roll out, such as 1.3.0).")
        }
        guard let stepsText = settings["rollout.steps"] else {
            throw fail("has no rollout.steps (the percentages to publish in turn, such as 1,10,50,100).")
        }
        var steps: [Int] = []
        for field in stepsText.split(separator: ",", omittingEmptySubsequences: false) {
            let word = field.trimmingSpaces
            guard let percent = Int(word), (1...100).contains(percent) else {
                throw fail("has rollout.steps=\(stepsText): '\(word)' is not a whole percentage from 1 to 100.")
            }
            guard percent > (steps.last ?? 0) else {
                throw fail("has rollout.steps=\(stepsText): the percentages must go up, and \(percent) comes after \(steps.last!).")
            }
            steps.append(percent)
        }
        let pauseText = settings["rollout.pause_s"] ?? "60"
        var pauses: [Int] = []
        for field in pauseText.split(separator: ",", omittingEmptySubsequences: false) {
            pauses.append(try seconds(String(field), key: "rollout.pause_s", file: file, allowZero: true))
        }
        if pauses.count == 1 { pauses = Array(repeating: pauses[0], count: steps.count) }
        guard pauses.count == steps.count else {
            throw fail("has rollout.pause_s=\(pauseText): \(pauses.count) pauses for \(steps.count) steps (\(steps.map { "\($0)%" }.joined(separator: ", "))); give one pause for every step, or one for all.")
        }
        let pause = pauses.max() ?? 0
        var approval: Set<Int> = []
        if let text = settings["rollout.approval"], !text.allSatisfy(\.isWhitespace) {
            for field in text.split(separator: ",", omittingEmptySubsequences: false) {
                let word = field.trimmingSpaces
                guard let percent = Int(word), steps.contains(percent) else {
                    throw fail("has rollout.approval=\(text): '\(word)' is not one of the steps (\(steps.map(String.init).joined(separator: ","))).")
                }
                approval.insert(percent)
            }
        }
        let expires = try seconds(settings["rollout.expires_in"] ?? "7d", key: "rollout.expires_in", file: file, allowZero: false)
        if let window = settings["analysis.window_s"] {
            throw fail("sets analysis.window_s=\(window), but a rollout's analysis window is each step's pause; set rollout.pause_s instead.")
        }
        var analysis: [String: String] = [:]
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) where key.hasPrefix("analysis.") {
            analysis[key] = value
            if key == "analysis.baseline" || key.hasPrefix("analysis.baseline.") {
                throw fail("has \(key), but a fleet rollout has no baseline beside its builds (analysis.baseline judges one host's bake window, where both builds serve); remove it.")
            }
            if key.hasPrefix("analysis.check."), key.hasSuffix(".kind"), !fleetKinds.contains(value) {
                throw fail("has \(key)=\(value), but a fleet rollout runs kind=prometheus checks only (http and app checks judge one host's bake window).")
            }
            if key.hasSuffix(".query"), let unknown = AnalysisCheck.Prometheus.variablesUsed(in: value).first(where: { !Self.variables.contains($0) }) {
                throw fail("has $\(unknown) in \(key), which a fleet rollout has no value for; use $version or $previous_version.")
            }
        }
        // The engine's own reading, with each pause as the window: every key, value and
        // condition checked now, before anything is published.
        var spec: AnalysisSpec?
        do { spec = try AnalysisSpec.parse(analysis.merging(["analysis.window_s": String(max(1, pause))]) { $1 }) } catch {
            throw RolloutPlanError("In the rollout plan \(file), \(error.message)")
        }
        let hooks: HookSettings?
        do { hooks = try HookSettings.parse(settings.filter { $0.key.hasPrefix("hooks.") }) } catch {
            throw RolloutPlanError("In the rollout plan \(file), \(error.message)")
        }
        return RolloutPlan(version: version, steps: steps, pauses: pauses, approvalSteps: approval, expiresInSeconds: expires,
                           appID: settings["rollout.app_id"], previousVersion: settings["rollout.previous_version"], analysis: analysis,
                           spec: (spec?.checks.isEmpty ?? true) ? nil : spec, hooks: hooks)
    }

    /// The variables a plan's queries may use.
    static let variables: Set<String> = ["version", "previous_version"]

    /// "90s", "30m", "12h", "7d" or bare seconds, as whole seconds.
    static func seconds(_ text: String, key: String, file: String, allowZero: Bool) throws(RolloutPlanError) -> Int {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        let word = text.trimmingSpaces
        let (digits, unit) = word.last.flatMap { units[$0] }.map { (word.dropLast(), $0) } ?? (Substring(word), 1)
        guard let value = Int(digits), value >= (allowZero ? 0 : 1), value <= 10 * 365 * 86_400 / unit else {
            throw RolloutPlanError("The rollout plan \(file) has \(key)=\(text), which is not a duration such as 90s, 30m, 12h or 7d\(allowZero ? " (0 for none)" : "").")
        }
        return value * unit
    }

    /// Whether the plan has checks to judge each pause with (else a pause is only a wait).
    var hasChecks: Bool { spec != nil }

    /// The check names, in order.
    var checkNames: [String] { spec?.checks.map(\.name) ?? [] }

    /// The values of the variables its queries may use.
    var variableValues: [String: String] {
        var values = ["version": version]
        if let previousVersion { values["previous_version"] = previousVersion }
        return values
    }

    /// The pause after step `step` (1-based).
    func pause(afterStep step: Int) -> Int { pauses[min(max(step, 1), pauses.count) - 1] }

    /// "a 60 s pause after each", or "a pause of 60 s, 600 s and 0 s after each step in turn".
    var pausesSummary: String {
        guard let first = pauses.first, pauses.contains(where: { $0 != first }) else { return "a \(pauses.first ?? 0) s pause after each" }
        let list = pauses.map { "\($0) s" }
        return "a pause of \(list.dropLast().joined(separator: ", ")) and \(list.last!) after each step in turn"
    }

    /// "5%, 50% (approval), 100%".
    var stepsSummary: String {
        steps.map { approvalSteps.contains($0) ? "\($0)% (approval)" : "\($0)%" }.joined(separator: ", ")
    }
}

/// A rollout plan that cannot be used: one sentence naming the file and the key (exit 78).
struct RolloutPlanError: Error, Equatable, Sendable {
    var message: String
    init(_ message: String) { self.message = message }
}

extension String {
    /// The text with every `target` replaced by `replacement` (no Foundation).
    func replacingEvery(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            out += rest[..<range.lowerBound]
            out += replacement
            rest = rest[range.upperBound...]
        }
        return out + rest
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        let text = Substring(self)
        guard let start = text.firstIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        let end = text.lastIndex(where: { $0 != " " && $0 != "\t" })!
        return text[start...end]
    }
}
