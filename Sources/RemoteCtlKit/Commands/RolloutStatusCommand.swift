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

    /// The process holding the run lock now, as the kernel says (`/proc/locks`: the flock a
    /// running rollout holds on `STATE.lock`, the one `lockRun` takes), else nil. The lock
    /// file's pid text is not asked: a rollout killed with -9 leaves it, and its pid may be reused.
    static func runningHolder(_ files: RolloutDiskFiles) -> pid_t? {
        var info = stat()
        guard stat(files.runLockPath, &info) == 0,
              let bytes = try? FileSystem.read("/proc/locks", limit: 1 << 20) ?? nil else { return nil }
        return holder(ofFLockOn: info, locks: String(decoding: bytes, as: UTF8.self))
    }

    /// In `/proc/locks`' text, the pid of the FLOCK on the file `info` describes
    /// ("2: FLOCK  ADVISORY  WRITE 8615 fe:00:16220289 0 EOF": pid, major:minor:inode in hex, inode in decimal).
    static func holder(ofFLockOn info: stat, locks: String) -> pid_t? {
        // glibc's encoding of st_dev (gnu_dev_major / gnu_dev_minor).
        let dev = UInt64(info.st_dev)
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~UInt64(0xfff))
        let minor = (dev & 0xff) | ((dev >> 12) & ~UInt64(0xff))
        for line in locks.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]) else { continue }
            let parts = fields[5].split(separator: ":")
            guard parts.count == 3, UInt64(parts[0], radix: 16) == major, UInt64(parts[1], radix: 16) == minor,
                  UInt64(parts[2]) == UInt64(info.st_ino) else { continue }
            return pid
        }
        return nil
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
