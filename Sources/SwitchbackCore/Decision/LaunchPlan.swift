/// What one start does, decided before it does anything: the slot it runs (or why it
/// refuses to start), why, what it records, and what it says. Made by `LaunchPlanner`, a
/// pure function of what a start knows; executed by `Launcher.run`, shown by
/// `rollbackctl status`, asked by the supervisor. Its sentences are rendered in one place
/// (`LaunchPlan+Sentences.swift`) from typed reasons.
public struct LaunchPlan: Sendable {
    /// The slot that runs and why (for a refused start: the slot it would have run).
    public var decision: SlotDecision
    /// Why the start is refused (exit 70); nil when it runs `decision.slot`.
    public var refusal: LaunchRefusal?
    /// The verdicts' consequences: a build to mark bad, the flag to follow an automatic
    /// rollback, the loud line (`HealthPolicy`). Written only by a start that counts tries.
    public var health: HealthChoice?
    /// The rollback a new release superseded, to record (`StateStore.recordSupersedingRelease`).
    public var superseded: PersistedState?
    /// Whether this start uses a try of the build it runs (boot counting): a trusted state,
    /// no forced slot, not a re-executed start.
    public var countsTry: Bool
    /// Whether the data must be converted back for the previous build before it runs (the
    /// current build published a reader floor above it).
    public var convertsData: Bool
    /// Why the state's verdicts were ignored (a damaged health file), said before anything runs.
    public var healthProblem: SwitchbackError?
    /// What the start says before the slot loads, in order (rendered by `sentence(of:_:)`).
    public var notes: [LaunchNote] = []

    /// The slot the start runs; nil when it is refused.
    public var slot: BuildSlot? { refusal == nil ? decision.slot : nil }

    /// Why, typed: the reason the slot runs, or the refusal.
    public var reason: LaunchReason { refusal.map(LaunchReason.refused) ?? .runs(decision.reason) }

    /// True when a forced slot (`SWITCHBACK_SLOT`) is the one it runs; such a run never falls back.
    public var isForced: Bool { decision.isForced }

    /// The slot that failed and why, when this start falls back from the slot it chose.
    public var fallback: (failed: BuildSlot, failure: String)? {
        if case .fallback(let failed, let failure) = decision.reason { return (failed, failure) }
        return nil
    }
}

/// A line the launcher prints about its plan before the slot loads.
public enum LaunchNote: Sendable, Equatable {
    /// Automatic rollback's loud line or its switch (`HealthChoice.message`).
    case health(String)
    /// Automatic rollback's switch was refused: the failing build stays.
    case switchRefused(failed: BuildSlot, why: String, refusal: String)
    /// The data could not be converted back for the previous build: the current one runs.
    case dataNotConvertible(problem: String)
}

/// Why a start runs a slot, or why it refuses to start: `code` is stable, for scripts and tests.
public enum LaunchReason: Sendable, Equatable {
    case runs(SlotDecision.Reason)
    case refused(LaunchRefusal)

    /// A stable code ("rolled-back", "fallback", "forced-slot-broken", ...; docs/design.md lists them).
    public var code: String {
        switch self {
        case .runs(let reason): return reason.code
        case .refused(let refusal): return refusal.code
        }
    }
}

/// Why a start does not run at all: the launcher exits 70 with the sentence.
public enum LaunchRefusal: Sendable, Equatable {
    /// `SWITCHBACK_SLOT` forces a slot that cannot run; a forced run never falls back.
    case forcedSlotBroken(slot: BuildSlot, failure: String)
    /// The chosen slot cannot run, and the other one cannot either.
    case noSlotRuns(first: String, then: String)
    /// `SWITCHBACK_SLOT=previous`, and the data cannot be converted back for it.
    case forcedPreviousCannotReadData(problem: String)
    /// The current slot cannot run, and falling back to the previous one needs the data
    /// converted back, which cannot happen.
    case fallbackCannotReadData(failure: String, previousVersion: String, problem: String)
    /// The data cannot be converted back for the previous build, and the current slot, which
    /// would run instead, cannot run.
    case currentCannotRunInstead(failure: String)

    /// A stable code for the refusal.
    public var code: String {
        switch self {
        case .forcedSlotBroken: return "forced-slot-broken"
        case .noSlotRuns: return "no-slot-runs"
        case .forcedPreviousCannotReadData: return "forced-previous-cannot-read-data"
        case .fallbackCannotReadData: return "fallback-cannot-read-data"
        case .currentCannotRunInstead: return "current-cannot-run-instead"
        }
    }
}

extension SlotDecision.Reason {
    /// A stable code for the reason.
    public var code: String {
        switch self {
        case .firstStart: return "first-start"
        case .persisted(let state): return state.rollback ? "rolled-back" : "rolled-forward"
        case .damagedState: return "damaged-state"
        case .untrustedState: return "untrusted-state"
        case .forcedByEnvironment: return "forced"
        case .fallback: return "fallback"
        case .markedBad: return "marked-bad"
        case .bothBad: return "both-bad"
        case .keptByExplicitChoice: return "kept-by-explicit-choice"
        case .noOtherBuild: return "no-other-build"
        case .supersededByRelease: return "superseded-by-release"
        case .switchRefused: return "switch-refused"
        case .keptRunning: return "kept-running"
        case .dataNotConvertible: return "data-not-convertible"
        }
    }
}
