#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RollbackCtlKit
import SwitchbackCore
import SwitchbackRemote

/// `rollout --plan FILE --key FILE --out FILE --state FILE [--dry-run] [--approve] [--promote-full] [--abort]`:
/// carries a release through the plan's steps (`RolloutRun`), or with `--dry-run` prints
/// what it would publish (`RolloutDryRun`).
struct RolloutCommand: Command {
    static let configuration = CommandConfiguration.rollout

    let plan: RolloutPlan
    let planPath: String
    let keyFiles: [String]
    let output: String
    let statePath: String
    let appID: String
    let previousVersion: String?
    let isDryRun: Bool
    let approve: Bool
    let abort: Bool
    let promoteFull: Bool

    init(_ parsed: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        func usage(_ message: String) -> CommandError { .usage(message, subcommand: "rollout") }
        guard let planPath = parsed.options["--plan"] else { throw usage("Missing '--plan FILE'.") }
        keyFiles = parsed.lists["--key"] ?? []
        if keyFiles.isEmpty { throw usage("Missing '--key FILE'.") }
        guard let output = parsed.options["--out"] else { throw usage("Missing '--out FILE' (the directive file the installs fetch).") }
        guard let statePath = parsed.options["--state"] else { throw usage("Missing '--state FILE' (where the rollout keeps its progress).") }
        if output == "-" { throw usage("'--out' must name a file: the rollout replaces it at every step.") }
        if output == statePath { throw usage("'--out' and '--state' must be two files, not both \(output).") }
        approve = parsed.flags.contains("--approve")
        abort = parsed.flags.contains("--abort")
        promoteFull = parsed.flags.contains("--promote-full")
        if approve && abort { throw usage("Give '--approve' or '--abort', not both.") }
        if promoteFull && abort { throw usage("Give '--promote-full' or '--abort', not both.") }
        isDryRun = parsed.flags.contains("--dry-run")
        self.planPath = planPath
        self.output = output
        self.statePath = statePath

        let bytes: [UInt8]?
        do { bytes = try TrustedFile.read(planPath, what: "rollout plan") } catch { throw CommandError(.configInvalid, error.message) }
        guard let bytes else {
            throw CommandError(.configInvalid, "The rollout plan \(planPath) does not exist; write one with rollout.version, rollout.steps and rollout.pause_s (docs/rollout.md).")
        }
        var plan: RolloutPlan
        do {
            let text = try KeyValueText.parse(bytes, describing: "The rollout plan \(planPath)")
            plan = try RolloutPlan.parse(text, file: planPath)
        } catch let error as SwitchbackError {
            throw CommandError(.configInvalid, error.message.hasSuffix(".") ? String(error.message.dropLast()) + "; fix that line." : error.message)
        } catch let error as RolloutPlanError {
            throw CommandError(.configInvalid, error.message)
        } catch {
            throw CommandError(.configInvalid, "The rollout plan \(planPath) cannot be read: \(error).")
        }
        // The app id and the previous version: the plan's, else the bundle's (as `sign` does).
        let manifest = Self.bundleManifest(context.bundle)
        guard let appID = plan.appID ?? manifest?.appID else {
            throw CommandError(.configInvalid, "The rollout plan \(planPath) has no rollout.app_id and there is no bundle to take the app id from; add rollout.app_id.")
        }
        self.appID = appID
        plan.appID = appID
        plan.previousVersion = plan.previousVersion ?? manifest?.previous.version
        previousVersion = plan.previousVersion
        self.plan = plan
        if previousVersion == nil, let key = plan.analysis.keys.sorted().first(where: { plan.analysis[$0]!.contains("$previous_version") }) {
            throw CommandError(.configInvalid, "The rollout plan \(planPath) uses $previous_version in \(key), but has no rollout.previous_version and there is no bundle to take it from; add rollout.previous_version.")
        }
    }

    func run(_ console: Console) throws(CommandError) {
        let signer = try TrustedInputs.signer(keyFiles: keyFiles)
        let clock = SystemRolloutClock()
        let files = RolloutDiskFiles(statePath: statePath, directivePath: output)
        if isDryRun {
            try RolloutDryRun(plan: plan, appID: appID, signer: signer, files: files, clock: clock, judge: try judge(clock: clock),
                              directiveName: output, statePath: statePath, console: console).run(approve: approve, abort: abort)
            return
        }
        var run = RolloutRun(plan: plan, appID: appID, signer: signer, files: files, clock: clock, judge: try judge(clock: clock),
                             directiveName: output, console: console)
        run.hooks = RolloutHooks(plan: plan, appID: appID, console: console)
        try run.run(approve: approve, abort: abort, promoteFull: promoteFull)
    }

    /// The manifest of `--bundle`, else of the bundle this executable is in (its bin/'s
    /// parent); nil when there is none. Only the manifest: a rollout needs no state directory.
    static func bundleManifest(_ bundle: String?) -> Manifest? {
        let root: String
        if let bundle {
            guard let resolved = FileSystem.resolved(bundle) else { return nil }
            root = resolved
        } else {
            guard let executable = FileSystem.resolved("/proc/self/exe") else { return nil }
            root = FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: executable))
        }
        return try? Manifest.load(bundleRoot: root)
    }

    /// The judge of each pause: the plan's checks, or a plain wait when it has none.
    func judge(clock: any RolloutClock) throws(CommandError) -> any RolloutJudge {
        guard let spec = plan.spec else { return PauseOnlyJudge(clock: clock) }
        return EngineRolloutJudge(spec: spec, variables: plan.variableValues)
    }
}
