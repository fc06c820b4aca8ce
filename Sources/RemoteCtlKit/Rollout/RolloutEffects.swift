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
    /// Replaces the pause's last measurements (`STATE.checks`, `RolloutCheckFile`), best
    /// effort: `rollout-status` shows them; the state file is not written during a pause.
    func writeMeasurements(_ bytes: [UInt8])
    /// Takes the lock a running rollout holds for its whole life, without waiting: nil when
    /// taken, else who holds it ("pid 4242"). A second run refuses to start while it is held;
    /// `--abort` goes on beside it (under the publication lock only).
    func lockRun() throws(CommandError) -> String?
    /// Releases the run lock (a process that ends releases it too).
    func unlockRun()
    /// Takes the publication lock, waiting a bounded time: held around every read, decision
    /// and write of the two files, by a run (except during its pauses) and by `--abort`, so
    /// no directive is written between another process's check of the file and its write.
    func lockPublication() throws(CommandError)
    /// Releases the publication lock (idempotent).
    func unlockPublication()
}

/// The wall clock and the waits of a pause.
protocol RolloutClock {
    /// Now, in milliseconds since 1970.
    func nowMilliseconds() -> Int64
    /// Sleeps until `deadline` (milliseconds since 1970), or returns at once if it passed.
    func sleep(until deadline: Int64)
}

/// What a judge tells while a pause runs: a check's measurement, or a line of its own.
enum RolloutJudgeReport: Sendable, Equatable {
    case measurement(Measurement)
    case note(String)

    /// The line the run prints.
    var line: String {
        switch self {
        case .measurement(let measurement): return "\(measurement.check) \(measurement.phase): \(measurement.detail)"
        case .note(let text): return text
        }
    }
}

/// Judges a step's pause: runs the plan's checks until `deadline` and returns the verdict.
protocol RolloutJudge {
    /// Judges the pause after `step` (1-based) was published to `percent`% of installs; each
    /// measurement is passed to `report` as soon as it is made (from any thread, one at a time).
    func judge(step: Int, percent: Int, until deadline: Int64, report: @escaping @Sendable (RolloutJudgeReport) -> Void) -> AnalysisVerdict
}

/// The real files: `--state FILE` and `--out FILE`, read strictly (`TrustedFile`: the state
/// decides what is published, and the command may run as root) and written through
/// `OutputFile` (checked directory, `O_EXCL` temporary file, fsync, `renameat`, fsync).
/// The locks are `flock(2)`s on two files beside the state file, which are never replaced
/// (the state file is, by rename, so a lock on it would not outlive a write): `STATE.lock`,
/// the run's, with the holder's pid in it for the refusal's sentence, and
/// `STATE.publish.lock`, the publication's.
struct RolloutDiskFiles: RolloutFiles {
    let statePath: String
    let directivePath: String
    /// The open lock files (closed, and so released, when the process ends).
    private let locks = Locks()

    init(statePath: String, directivePath: String) {
        self.statePath = statePath
        self.directivePath = directivePath
    }

    final class Locks: @unchecked Sendable {
        var run: Int32 = -1
        var publication: Int32 = -1
        var isPublishing = false
        deinit {
            if run >= 0 { close(run) }
            if publication >= 0 { close(publication) }
        }
    }

    /// How long `--abort` (or a run's next publication) waits for another process's
    /// publication: signing and two fsynced writes take well under a second.
    static let publicationWaitSeconds = 30

    var runLockPath: String { statePath + ".lock" }
    var measurementsPath: String { statePath + ".checks" }

    func writeMeasurements(_ bytes: [UInt8]) {
        try? OutputFile.write(bytes, to: measurementsPath, mode: 0o600)
    }
    var publicationLockPath: String { statePath + ".publish.lock" }

    func lockRun() throws(CommandError) -> String? {
        let fd = try OutputFile.openLockFile(runLockPath)
        guard flockRetrying(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.holder(fd)
            close(fd)
            return holder
        }
        // The holder's pid, for a second run's sentence (the lock is the flock, not this text).
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        locks.run = fd
        return nil
    }

    func unlockRun() {
        guard locks.run >= 0 else { return }
        _ = ftruncate(locks.run, 0)
        close(locks.run)
        locks.run = -1
    }

    func lockPublication() throws(CommandError) {
        if locks.isPublishing { return }
        if locks.publication < 0 { locks.publication = try OutputFile.openLockFile(publicationLockPath) }
        var waited = 0
        while flockRetrying(locks.publication, LOCK_EX | LOCK_NB) != 0 {
            guard waited < Self.publicationWaitSeconds * 20 else {
                throw .failure("The rollout's publication lock \(publicationLockPath) is still held after \(Self.publicationWaitSeconds) s by another rollbackctl-remote rollout (\(Self.holderOfRun(runLockPath))); find it with 'fuser -v \(publicationLockPath)' (a process stopped mid-publication?), then try again.")
            }
            usleep(50_000)
            waited += 1
        }
        locks.isPublishing = true
    }

    func unlockPublication() {
        guard locks.isPublishing else { return }
        _ = flock(locks.publication, LOCK_UN)
        locks.isPublishing = false
    }

    private func flockRetrying(_ fd: Int32, _ operation: Int32) -> Int32 {
        while true {
            let result = flock(fd, operation)
            if result == 0 || errno != EINTR { return result }
        }
    }

    /// "pid 4242", from the run lock file's text; "pid unknown" when it holds none.
    static func holder(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        let text = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
        let pid = text.split(separator: "\n").first.flatMap { Int32($0) }
        return pid.map { "pid \($0)" } ?? "pid unknown"
    }

    static func holderOfRun(_ path: String) -> String {
        guard let fd = try? OutputFile.openLockFile(path) else { return "pid unknown" }
        defer { close(fd) }
        return holder(fd)
    }

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

    func judge(step: Int, percent: Int, until deadline: Int64, report: @escaping @Sendable (RolloutJudgeReport) -> Void) -> AnalysisVerdict {
        let seconds = max(0, (deadline - clock.nowMilliseconds() + 500) / 1000)
        clock.sleep(until: deadline)
        return .passed("no checks configured (analysis.checks), paused \(seconds) s")
    }
}
