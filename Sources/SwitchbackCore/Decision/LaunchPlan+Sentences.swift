/// Every sentence a start says about its plan, rendered from the typed reasons: the launcher
/// prints them (prefixed `launcher: `), `rollbackctl status` shows the same ones.
extension LaunchPlan {
    /// `status`'s first line: the slot the next start runs and why, or that it is refused and
    /// the launcher's sentence.
    public func sentence(_ manifest: Manifest) -> String {
        if let refusal { return "The next start is refused (exit 70): \(refusal.sentence(manifest))" }
        return "The next start runs the \(decision.slot.rawValue) slot (\(manifest[decision.slot].version)) because \(decision.explanation(manifest))."
    }

    /// The line the launcher prints for `note` (after `launcher: `).
    public static func sentence(of note: LaunchNote, _ manifest: Manifest) -> String {
        switch note {
        case .health(let message):
            return message
        case .switchRefused(let failed, let why, let refusal):
            return "\(HealthPolicy.capitalized("the \(failed.rawValue) build (\(manifest[failed].version)) \(why)")), but it stays: \(refusal)"
        case .dataNotConvertible(let problem):
            return "\(problem) Running the current slot (\(manifest.current.version)) instead."
        }
    }

    /// The line the launcher prints once the slot loaded: the fallback it made, or what it
    /// assumed about a damaged or untrusted state; nil for neither.
    public func closingNote(_ manifest: Manifest, state: LoadedState) -> String? {
        if let (_, failure) = fallback {
            return "\(failure) Running the \(decision.slot.rawValue) slot (\(manifest[decision.slot].version)) instead."
        }
        // An untrusted rejection the data could not follow: the note said it all.
        if state.isUntrusted, case .dataNotConvertible = decision.reason { return nil }
        return state.problemSentence
    }

    /// The sentence of a rejection an untrusted state records whose previous build cannot
    /// read the data: converting it back would write there, so the current build runs.
    static func untrustedConversion(state: LoadedState, floor: String, previousVersion: String) -> String {
        let found = state.problem?.clause ?? "The state is not trusted"
        let problem = "the previous slot (\(previousVersion)) cannot run on the data: its reader floor is \(floor), and converting it back would write to a state directory the launcher does not trust; fix its permissions as said, and the choice it records counts again."
        return "\(found)\(state.untrustedRejection.map { "; it records that \($0), but" } ?? ";") \(problem)"
    }

    /// The sentence of a data conversion that cannot happen because the current build, which
    /// converts its own data back, cannot be loaded (`message`: why).
    public static func conversionUnavailable(manifest: Manifest, message: String) -> String {
        DataDowngrade.refusal(DataDowngrade.Outcome(status: .unavailable, message: message), command: "rollbackctl rollback", manifest: manifest)
    }
}

extension LaunchRefusal {
    /// The launcher's sentence (after `launcher: `) when it refuses the start.
    public func sentence(_ manifest: Manifest) -> String {
        switch self {
        case .forcedSlotBroken(_, let failure):
            return "\(failure) SWITCHBACK_SLOT forces this slot, so the launcher does not fall back."
        case .noSlotRuns(let first, let then):
            return "neither slot can run. First: \(first) Then: \(then) Rebuild the bundle with scripts/bundle, or restore the files named above."
        case .forcedPreviousCannotReadData(let problem):
            return "\(problem) SWITCHBACK_SLOT forces the previous slot, so the launcher stops here."
        case .fallbackCannotReadData(let failure, let previousVersion, let problem):
            return "\(failure) The previous slot (\(previousVersion)) cannot run instead: \(problem)"
        case .currentCannotRunInstead(let failure):
            return failure
        }
    }
}

extension SlotDecision {
    /// Why, as the end of a sentence ("because ..."); versions from `manifest`.
    public func explanation(_ manifest: Manifest) -> String {
        switch reason {
        case .switchRefused(let failed, let why, let refusal):
            return "the \(failed.rawValue) build \(why), but switching to the \(failed.other.rawValue) build (\(manifest[failed.other].version)) was refused: \(Self.clause(refusal.hasSuffix(".") ? String(refusal.dropLast()) : refusal))"
        case .dataNotConvertible(let problem):
            return "the previous build cannot run on the data: \(Self.clause(problem.hasSuffix(".") ? String(problem.dropLast()) : problem))"
        default:
            return explanation
        }
    }

    /// Why, as the end of a sentence ("because ...").
    public var explanation: String {
        switch reason {
        case .firstStart:
            return "nobody has rolled back this install (there is no state file yet)"
        case .persisted(let state):
            return Self.explain(state)
        case .damagedState(let loaded):
            return loaded.problemSentence.map { Self.clause(String($0.dropLast())) } ?? "the state file is damaged"
        case .untrustedState(let loaded):
            let found = loaded.problem.map { Self.clause($0.clause) } ?? "it failed the strict checks"
            guard let rejection = loaded.untrustedRejection else { return "the state is not trusted and records no rollback: \(found)" }
            return "\(rejection), which is honoured although the state is not trusted: \(found)"
        case .forcedByEnvironment:
            return "SWITCHBACK_SLOT=\(slot.rawValue) forces it for this run"
        case .fallback(let failed, let failure):
            return "the \(failed.rawValue) slot cannot run (\(Self.clause(failure.hasSuffix(".") ? String(failure.dropLast()) : failure)))"
        case .markedBad(let failed, let why):
            return "the \(failed.rawValue) build \(why)"
        case .bothBad:
            return "both builds are bad and this one started well most recently"
        case .keptByExplicitChoice(let failed, let why, let rejected):
            return "it was chosen explicitly: the \(failed.rawValue) build \(why), but automatic rollback does not switch to the \(failed.other.rawValue) build, which \(rejected)"
        case .noOtherBuild(_, let why):
            return "the build \(why), but both slots hold it (a first release), so there is no other build to switch to"
        case .supersededByRelease(let rollback, let current):
            return StartPlan.supersessionReason(rollback, current: current)
        case .switchRefused(let failed, let why, _):
            return "the \(failed.rawValue) build \(why), but switching to the \(failed.other.rawValue) build was refused"
        case .keptRunning:
            return "the running build keeps running: the choice still selects it, or only its tries ran out"
        case .dataNotConvertible:
            return "the previous build cannot run on the data, which could not be converted back"
        }
    }

    /// A sentence made the end of another ("because the state file ..."): its first word in
    /// lower case when it is a capitalised word ("The", "Reading"), not a name ("HOME").
    static func clause(_ sentence: String) -> String {
        let bytes = Array(sentence.utf8.prefix(2))
        guard bytes.count == 2, (0x41...0x5A).contains(bytes[0]), (0x61...0x7A).contains(bytes[1]) else { return sentence }
        return String(decoding: [bytes[0] + 0x20], as: UTF8.self) + String(Substring(sentence.utf8.dropFirst()))
    }

    static func explain(_ state: PersistedState) -> String {
        let when = state.changedAt.map { " on \(formatUTC($0))" } ?? ""
        let why = state.reason.map { ": \"\($0)\"" } ?? ""
        let verb = state.rollback ? "rolled back" : "rolled forward"
        switch state.source {
        case .default:
            // A superseding release records its reason; the plain default has none.
            return state.reason.map { "\($0)\(when)" } ?? "nobody has rolled back this install"
        case .cli:
            return "an operator \(verb) with rollbackctl\(when)\(why)"
        case .remote:
            return "a signed remote directive \(verb)\(when)\(why)"
        case .auto:
            return "automatic rollback \(verb)\(when)\(why)"
        }
    }
}
