#if canImport(Glibc)
import Glibc
#endif
import RollbackCtlKit
import SwitchbackCore

/// The files a rollout reads and writes: its state file and the directive file a web server
/// serves. A protocol so the driver's tests run against memory.
protocol RolloutFiles {
    /// The state file's bytes, nil when there is none (a rollout not started yet).
    func readState() throws(CommandError) -> [UInt8]?
    /// Replaces the state file atomically and durably (temporary file, fsync, rename, fsync
    /// of the directory).
    func writeState(_ bytes: [UInt8]) throws(CommandError)
    /// The directive file's bytes, nil when there is none.
    func readDirective() throws(CommandError) -> [UInt8]?
    /// Replaces the directive file atomically and durably: a web server serving it hands
    /// out the old file or the new one, never half of one.
    func writeDirective(_ bytes: [UInt8]) throws(CommandError)
}

/// The wall clock and the waits of a pause.
protocol RolloutClock {
    /// Now, in milliseconds since 1970.
    func nowMilliseconds() -> Int64
    /// Sleeps until `deadline` (milliseconds since 1970), or returns at once if it passed.
    func sleep(until deadline: Int64)
}

/// Judges a step's pause: runs the plan's checks until `deadline` and returns the verdict.
protocol RolloutJudge {
    /// Judges the pause after `step` (1-based) was published to `percent`% of installs; each
    /// measurement is passed to `report` as one line as soon as it is made (from any thread).
    func judge(step: Int, percent: Int, until deadline: Int64, report: @escaping @Sendable (String) -> Void) -> StepVerdict
}

/// The real files: `--state FILE` and `--out FILE`, read strictly (`TrustedFile`: the state
/// decides what is published, and the command may run as root) and written through
/// `OutputFile` (checked directory, `O_EXCL` temporary file, fsync, `renameat`, fsync).
struct RolloutDiskFiles: RolloutFiles {
    let statePath: String
    let directivePath: String

    func readState() throws(CommandError) -> [UInt8]? {
        do { return try TrustedFile.read(statePath, what: "rollout state file") } catch { throw .failure(error.message) }
    }

    func writeState(_ bytes: [UInt8]) throws(CommandError) {
        try OutputFile.write(bytes, to: statePath, mode: 0o600)
    }

    func readDirective() throws(CommandError) -> [UInt8]? {
        do { return try TrustedFile.read(directivePath, what: "directive file") } catch { throw .failure(error.message) }
    }

    func writeDirective(_ bytes: [UInt8]) throws(CommandError) {
        try OutputFile.write(bytes, to: directivePath)
    }
}

/// The system's clock; pauses sleep with `nanosleep(2)`, resumed after a signal.
struct SystemRolloutClock: RolloutClock {
    func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    func sleep(until deadline: Int64) {
        while true {
            let left = deadline - nowMilliseconds()
            guard left > 0 else { return }
            var request = timespec(tv_sec: Int(left / 1000), tv_nsec: Int(left % 1000) * 1_000_000)
            _ = nanosleep(&request, nil)
        }
    }
}

/// A plan without checks: each pause is only a wait, and passes.
struct PauseOnlyJudge: RolloutJudge {
    let clock: any RolloutClock

    func judge(step: Int, percent: Int, until deadline: Int64, report: @escaping @Sendable (String) -> Void) -> StepVerdict {
        let seconds = max(0, (deadline - clock.nowMilliseconds() + 500) / 1000)
        clock.sleep(until: deadline)
        return .successful("no checks configured (analysis.checks), paused \(seconds) s")
    }
}
