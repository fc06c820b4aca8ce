import SwitchbackCore

/// The bundle's `manifest`: parsed, then every setting the launcher and the supervisor read,
/// and the arithmetic they do with them (deadlines, backoff doubling, the crash window).
enum ManifestTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let manifest: Manifest
        do { manifest = try Manifest.parse(bytes, path: "/fuzz/manifest") } catch { return try rejected(error.message) }
        let remote = manifest.remote
        let supervise = SupervisorSettings(manifest: manifest)
        try check(manifest.trialTries >= 1, "trial tries below 1")
        // The supervisor's backoff: doubled after every abnormal exit, capped at the maximum.
        var backoff = supervise.backoffInitialMilliseconds
        for _ in 0..<64 {
            let doubled = backoff.multipliedReportingOverflow(by: 2)
            backoff = doubled.overflow ? supervise.backoffMaxMilliseconds : min(doubled.partialValue, supervise.backoffMaxMilliseconds)
        }
        // Deadlines are monotonic seconds plus milliseconds / 1000; the poll timeout is an Int32.
        let deadlines = [supervise.graceMilliseconds, supervise.backoffResetAfterMilliseconds, remote.deadlineMilliseconds,
                         remote.beforeStartDeadlineMilliseconds].map { 1e6 + Double($0) / 1000 + 1 }
        _ = Int32(supervise.pollMilliseconds)
        var crashes = CrashWindow(limit: supervise.crashLimit, windowMilliseconds: supervise.crashWindowMilliseconds)
        var reached = false
        for crash in 0..<3 { reached = crashes.record(build: manifest.current.sha256, at: 1_000_000 + Int64(crash) * 10) || reached }
        // The remote check's due test: age against ± the interval.
        let age: Int64 = 123
        let due = age >= remote.intervalSeconds || age < -remote.intervalSeconds
        _ = remote.keyPEMs
        return .parsed("\(manifest.appID) \(manifest.current.version)/\(manifest.previous.version) tries \(manifest.trialTries) "
            + "backoff \(backoff) deadlines \(deadlines) crash \(reached) due \(due) supervise \(manifest.supervise)")
    }
}
