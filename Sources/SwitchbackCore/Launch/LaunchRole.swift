/// What this launcher process is, decided once from its environment at the top of
/// `Launcher.run`; nothing after that asks the environment again what it is.
public enum LaunchRole: Sendable, Equatable {
    /// Started by `DataDowngrade` (`SWITCHBACK_DOWNGRADE=run|force`): converts the current
    /// build's data back for the previous one, and runs no app.
    case dataDowngrade(mode: String)
    /// Started by `PendingSteps` (`SWITCHBACK_PLAN_STEPS=current|previous`): says which data
    /// steps that slot would run at its start, and runs no app and no step.
    case planSteps(slot: String)
    /// A supervisor's child (`SWITCHBACK_SUPERVISOR_PID`): plans and runs a start, reports
    /// its slot to the supervisor, and leaves the remote check and the journal to it.
    case supervisedChild
    /// A start (plain, forced by `SWITCHBACK_SLOT`, or re-executed after a failed slot:
    /// those are inputs of its plan), or a supervisor of such starts: `supervise` is
    /// `SWITCHBACK_SUPERVISE` (1/true, 0/false), nil when the manifest's setting decides.
    case start(supervise: Bool?)

    /// The role `environment` selects.
    public static func decide(environment: (String) -> String?) -> LaunchRole {
        if let mode = environment(DataDowngrade.modeVariable) { return .dataDowngrade(mode: mode) }
        if let slot = environment(PendingSteps.modeVariable) { return .planSteps(slot: slot) }
        if environment(Supervisor.parentVariable) != nil { return .supervisedChild }
        switch environment("SWITCHBACK_SUPERVISE") {
        case "1", "true": return .start(supervise: true)
        case "0", "false": return .start(supervise: false)
        default: return .start(supervise: nil)
        }
    }

    /// True when this process supervises children rather than running the app itself.
    public func supervises(_ manifest: Manifest) -> Bool {
        if case .start(let supervise) = self { return supervise ?? manifest.supervise }
        return false
    }

    /// True for a supervisor's child.
    public var isSupervisedChild: Bool { self == .supervisedChild }
}
