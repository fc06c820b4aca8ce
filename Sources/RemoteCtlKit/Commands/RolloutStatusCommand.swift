#if canImport(Glibc)
import Glibc
#endif
import RollbackCtlKit
import SwitchbackCore

/// `rollout-status --state FILE`: where a rollout is, from its state file and the pause's
/// measurements beside it (`RolloutCheckFile`), without taking any lock (docs/rollout.md).
struct RolloutStatusCommand: Command {
    static let configuration = CommandConfiguration.rolloutStatus

    let statePath: String

    init(_ parsed: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        guard let statePath = parsed.options["--state"] else {
            throw .usage("Missing '--state FILE' (the rollout's state file).", subcommand: "rollout-status")
        }
        self.statePath = statePath
    }

    func run(_ console: Console) throws(CommandError) {
        let files = RolloutDiskFiles(statePath: statePath, directivePath: "")
        guard let bytes = try files.readState() else {
            throw .failure("There is no rollout state file \(statePath); a rollout writes it at its first run (rollbackctl-remote rollout --state \(statePath)).")
        }
        let state: RolloutState
        do { state = try RolloutState.parse(bytes, file: statePath) } catch { throw .failure(error.message) }
        let checks = ((try? TrustedFile.read(files.measurementsPath, what: "rollout measurements file")) ?? nil).flatMap(RolloutCheckFile.parse)
        for line in Self.lines(state, checks: checks, holder: Self.runningHolder(files), now: currentUnixTime() * 1000) {
            console.out(line)
        }
    }

    /// The pid in the run lock file when that process still runs, else nil.
    static func runningHolder(_ files: RolloutDiskFiles) -> pid_t? {
        let holder = RolloutDiskFiles.holderOfRun(files.runLockPath)
        guard let pid = Int32(holder.dropFirst("pid ".count)), pid > 0, kill(pid, 0) == 0 || errno == EPERM else { return nil }
        return pid
    }

    /// The report's lines: where the rollout is, its checks, its steps, who runs it.
    static func lines(_ state: RolloutState, checks: (step: Int, entries: [RolloutCheckFile.Entry])?, holder: pid_t?, now: Int64) -> [String] {
        let count = state.steps.count
        let stepName = "step \(state.step) of \(count) (\(state.percent)%)"
        var lines: [String] = []
        let published = state.records[state.step].map { " (directive serial \($0.serial), published \(formatRFC3339($0.publishedAt)))" } ?? ""
        switch state.phase {
        case .ready:
            lines.append("Rollout of \(state.version): \(stepName) is next; nothing of it is published yet.")
        case .awaitingApproval:
            lines.append("Rollout of \(state.version): \(stepName) waits for approval: run the rollout again with --approve to publish it, or with --abort to roll back.")
        case .publishing:
            lines.append("Rollout of \(state.version): \(stepName) is being published (serial \(state.serial)); a run that stopped here publishes it again when it resumes.")
        case .analysing:
            let left = state.pauseEndsAt.map { max(0, ($0 - now + 999) / 1000) }
            let pause = state.pauseEndsAt.map { "\(left ?? 0) s left of its pause (until \(RolloutRun.clockTime($0)))" } ?? "its pause runs"
            lines.append("Rollout of \(state.version): \(stepName)\(published): \(pause).")
        case .inconclusive, .held:
            lines.append("Rollout of \(state.version): \(stepName)\(published) is \(state.phase.rawValue): \(state.result ?? "no result"); run the rollout again with --approve to go on, or with --abort to roll back.")
        case .rollingBack:
            lines.append("Rollout of \(state.version): the rollback (serial \(state.serial)) is being published: \(state.result ?? "no reason recorded").")
        case .rolledBack:
            lines.append("Rollout of \(state.version): rolled back at \(stepName): \(state.result ?? "no reason recorded").")
        case .completed:
            lines.append("Rollout of \(state.version): complete: the last step (100%) is published.")
        }
        if let checks, checks.step == state.step, state.phase == .analysing || state.phase == .inconclusive || state.phase == .held {
            if checks.entries.isEmpty { lines.append("  No check has been measured in this pause yet.") }
            for entry in checks.entries {
                lines.append("  \(entry.check): \(entry.phase): \(entry.sentence) (\(entry.at > 0 ? RolloutRun.clockTime(entry.at) : "at an unknown time"))")
            }
        }
        for index in state.records.keys.sorted() where index != state.step || state.isOver {
            let record = state.records[index]!
            lines.append("Step \(index) of \(count) (\(state.steps[index - 1])%): serial \(record.serial), published \(formatRFC3339(record.publishedAt)): \(record.result ?? "no result recorded").")
        }
        lines.append(holder.map { "A rollout process (pid \($0)) holds the state file." }
                     ?? (state.isOver ? "No rollout process runs; the rollout is over." : "No rollout process runs: run the same rollout command to go on."))
        return lines
    }
}
