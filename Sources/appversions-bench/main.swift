// Measures AppVersions at scale: 10,000 registered steps and a 10,000-event history.
// Build and run in release mode:  swift run -c release appversions-bench
// Prints the median of several runs in ms and exits 1 if a limit is exceeded.
#if canImport(Glibc)
import Glibc
#endif
import AppVersions

let stepCount = 10_000
let eventCount = 10_000
let repetitions = 9
let running = RunningVersion(version: Version(99, 0, 0), build: "bench")

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
}

func median(_ runs: Int, _ body: () throws -> Double) rethrows -> Double {
    var samples: [Double] = []
    for _ in 0..<runs { samples.append(try body()) }
    samples.sort()
    return samples[samples.count / 2]
}

/// 10,000 no-op steps at distinct versions below 99.0.0, registered in a scrambled order.
func makeMigrator(store: any LedgerStore) -> Migrator {
    var migrator = Migrator(store: store)
    migrator.baseline = { _ in .zero }
    var order = Array(0..<stepCount)
    var generator = SystemRandomNumberGenerator()
    order.shuffle(using: &generator)
    for index in order {
        let version = Version(1 + index / 1000, (index / 10) % 100, index % 10)
        migrator.register("step-\(index)", at: version) { _ in }
    }
    return migrator
}

/// Records 10,000 version transitions into `store`.
func fillHistory(_ store: any LedgerStore) throws {
    // One batch through a memory store, copied to the target in one append.
    let memory = InMemoryLedgerStore()
    let tracker = VersionTracker(store: memory, osReleasePath: nil)
    for index in 0..<eventCount {
        let version = Version(index / 100, index % 100, 0)
        try tracker.record(RunningVersion(version: version, build: "b\(index)"), slot: index % 7 == 0 ? "previous" : "current")
    }
    try store.append(memory.entries(in: .app), to: .app)
}

func scratchDirectory() -> String {
    var template = Array("/tmp/appversions-bench-XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { buffer in String(cString: mkdtemp(buffer.baseAddress!)) }
    return path
}

do {
    // 1. Decide and run 10,000 due no-op steps (memory store, 10,000-event history).
    let runAll = try median(repetitions) {
        let store = InMemoryLedgerStore()
        try fillHistory(store)
        let migrator = makeMigrator(store: store)
        var report: MigrationReport?
        let time = try milliseconds { report = try migrator.run(for: running) }
        precondition(report?.ran.count == stepCount, "expected every step to run")
        return time
    }

    // 2. A normal start from disk: the ledger holds the history and all 10,000 step
    //    records; the migrator reads it cold, decides, finds nothing due.
    let directory = scratchDirectory()
    let diskStore = FileLedgerStore(directory: directory)
    do {
        let memory = InMemoryLedgerStore()
        try fillHistory(memory)
        try makeMigrator(store: memory).run(for: running)
        try diskStore.append(memory.entries(in: .app), to: .app)
    }
    let ledgerPath = diskStore.path(for: .app)
    var info = stat()
    stat(ledgerPath, &info)
    let decideFromDisk = try median(repetitions) {
        let migrator = makeMigrator(store: FileLedgerStore(directory: directory))
        var plan: MigrationPlan?
        let time = try milliseconds { plan = try migrator.plan(for: running) }
        precondition(plan?.isUpToDate == true, "expected nothing due")
        return time
    }
    let runFromDisk = try median(repetitions) {
        let migrator = makeMigrator(store: FileLedgerStore(directory: directory))
        var report: MigrationReport?
        let time = try milliseconds { report = try migrator.run(for: running) }
        precondition(report?.ran.isEmpty == true, "expected nothing to run")
        return time
    }

    // 3. Load the 10,000-event history from disk, cold.
    let loadHistory = try median(repetitions) {
        let tracker = VersionTracker(store: FileLedgerStore(directory: directory), osReleasePath: nil)
        var history: VersionHistory?
        let time = try milliseconds { history = try tracker.history() }
        precondition(history?.events.count == eventCount, "expected the whole history")
        return time
    }

    // 4. For information: one due step on disk costs two fsynced atomic rewrites of the ledger.
    let oneStepOnDisk = try median(repetitions) {
        var migrator = makeMigrator(store: FileLedgerStore(directory: directory))
        migrator.register("extra-\(UInt64.random(in: 0...UInt64.max))", at: "98.0.0") { _ in }
        return try milliseconds { try migrator.run(for: running) }
    }

    // Remove the scratch ledger.
    for name in ["scope-app.ledger", "scope-app.lock", "scope-app.ledger.tmp"] { unlink(directory + "/" + name) }
    rmdir(directory)

    func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return "\(rounded)"
    }
    let runLimit = 50.0
    let loadLimit = 20.0
    print("AppVersions benchmark: \(stepCount) registered steps, \(eventCount)-event history, median of \(repetitions) runs")
    print("ledger on disk: \(info.st_size / 1024) KiB, \(eventCount) history events + \(stepCount) step records")
    print("decide + run \(stepCount) due no-op steps (memory store): \(format(runAll)) ms (limit \(Int(runLimit)) ms)")
    print("decide, nothing due (file store, cold read):            \(format(decideFromDisk)) ms (limit \(Int(runLimit)) ms)")
    print("run, nothing due (file store, cold read, with lock):     \(format(runFromDisk)) ms (limit \(Int(runLimit)) ms)")
    print("load history (file store, cold read):                   \(format(loadHistory)) ms (limit \(Int(loadLimit)) ms)")
    print("info: one due step on disk (2 atomic rewrites, k steps take k+1): \(format(oneStepOnDisk)) ms")
    var failures: [String] = []
    if runAll > runLimit { failures.append("running \(stepCount) steps took \(format(runAll)) ms") }
    if decideFromDisk > runLimit { failures.append("deciding from disk took \(format(decideFromDisk)) ms") }
    if runFromDisk > runLimit { failures.append("a normal start from disk took \(format(runFromDisk)) ms") }
    if loadHistory > loadLimit { failures.append("loading the history took \(format(loadHistory)) ms") }
    if !failures.isEmpty {
        print("Error: over the limit: \(failures.joined(separator: "; ")).")
        exit(1)
    }
    print("OK: all within limits.")
} catch {
    print("Error: \(error)")
    exit(1)
}
