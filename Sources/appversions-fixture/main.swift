// A child process for AppVersions' crash-safety tests: it runs a migrator or the tracker
// against a ledger directory, so a test can kill it with SIGKILL at a chosen moment.
//
// USAGE:
//   appversions-fixture migrate DIR VERSION [--sleep SECONDS] [--marker PATH]
//       Steps: "a" at 1.0.0, "slow" at 1.1.0 (touches PATH, then sleeps), "c" at 1.1.0.
//       Prints "began NAME" per step and a final "ran=... interrupted=... retried=..." line.
//   appversions-fixture churn DIR [--marker PATH]
//       Records alternating versions forever; touches PATH after the first write.
//   appversions-fixture notes LEDGER DATA run|downgrade VERSION [--marker PATH] [--pause MICROSECONDS]
//       A data directory of files that steps rewrite one by one: "v2" at 2.0.0 (no revert,
//       so a downgrade restores its snapshot), "v3" at 3.0.0 (with a revert that pauses
//       between files). Touches PATH just before running or downgrading; prints one
//       "recovered=... undone=..." line.
//   appversions-fixture duplicate
//       Registers the step "twice" two times, which must trap.
#if canImport(Glibc)
import Glibc
#endif
import AppVersions

func option(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func touch(_ path: String?) {
    guard let path else { return }
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    if descriptor >= 0 { close(descriptor) }
}

func say(_ line: String) {
    print(line)
    fflush(nil)
}

func complain(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

struct FixtureFailure: Error, CustomStringConvertible {
    let description: String
}

/// Rewrites every file in `directory` to `text`, each with a write and a rename.
func rewriteNotes(in directory: String, to text: String, pause: UInt32) throws {
    guard let stream = opendir(directory) else { throw FixtureFailure(description: "cannot open \(directory)") }
    var names: [String] = []
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name.hasPrefix("note-") { names.append(name) }
    }
    closedir(stream)
    for name in names.sorted() {
        let temporary = directory + "/.tmp-" + name
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw FixtureFailure(description: "cannot write \(temporary)") }
        var bytes = text
        bytes.withUTF8 { _ = write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard rename(temporary, directory + "/" + name) == 0 else { throw FixtureFailure(description: "cannot rename \(temporary)") }
        if pause > 0 { usleep(pause) }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "migrate" where arguments.count >= 3:
        let store = FileLedgerStore(directory: arguments[1])
        let running = RunningVersion(version: try Version(tolerant: arguments[2]), build: "fixture")
        let sleepSeconds = option("--sleep", in: arguments).flatMap(Double.init) ?? 0
        let marker = option("--marker", in: arguments)
        var retried: [String] = []
        var migrator = Migrator(store: store)
        migrator.baseline = { _ in .zero }
        migrator.register("a", at: "1.0.0") { context in say("began \(context.step)") }
        migrator.register("slow", at: "1.1.0") { context in
            say("began \(context.step)")
            if context.isRetryAfterInterruption { retried.append(context.step) }
            touch(marker)
            if sleepSeconds > 0 { usleep(UInt32(sleepSeconds * 1_000_000)) }
        }
        migrator.register("c", at: "1.1.0") { context in say("began \(context.step)") }
        let report = try migrator.run(for: running)
        let interrupted = report.interrupted.map(\.name).joined(separator: ",")
        say("ran=\(report.ran.joined(separator: ",")) interrupted=\(interrupted) retried=\(retried.joined(separator: ","))")
    case "churn" where arguments.count >= 2:
        let tracker = VersionTracker(store: FileLedgerStore(directory: arguments[1]), osReleasePath: nil)
        let marker = option("--marker", in: arguments)
        var minor = 0
        while true {
            minor += 1
            try tracker.record(RunningVersion(version: Version(1, minor, 0), build: "churn"), slot: "current")
            if minor == 1 { touch(marker) }
        }
    case "notes" where arguments.count >= 5:
        let data = arguments[2]
        let pause = option("--pause", in: arguments).flatMap(UInt32.init) ?? 0
        var migrator = Migrator(store: FileLedgerStore(directory: arguments[1]))
        migrator.baseline = { _ in "1.0.0" }
        migrator.dataDirectory = data
        migrator.register("v2", at: "2.0.0") { _ in try rewriteNotes(in: data, to: "v2", pause: 0) }
        migrator.register("v3", at: "3.0.0", readerFloor: "3.0.0", revert: { _ in try rewriteNotes(in: data, to: "v2", pause: pause) }) { _ in
            try rewriteNotes(in: data, to: "v3", pause: 0)
        }
        let version = try Version(tolerant: arguments[4])
        let marker = option("--marker", in: arguments)
        if arguments[3] == "downgrade" {
            touch(marker)
            let report = try migrator.downgrade(to: version)
            say("recovered=\(report.recovered.map { "\($0.name):\($0.method)" }.joined(separator: ",")) undone=\(report.actions.map(\.name).joined(separator: ","))")
        } else {
            touch(marker)
            let report = try migrator.run(for: RunningVersion(version: version, build: "fixture"))
            say("recovered=\(report.recoveredUndos.map { "\($0.name):\($0.method)" }.joined(separator: ",")) ran=\(report.ran.joined(separator: ","))")
        }
    case "duplicate":
        var migrator = Migrator(store: InMemoryLedgerStore())
        migrator.register("twice", at: "1.0.0") { _ in }
        migrator.register("twice", at: "2.0.0") { _ in }
        say("registered twice without trapping")
    default:
        complain("Error: unknown or incomplete command.\nUsage: appversions-fixture migrate DIR VERSION [--sleep SECONDS] [--marker PATH] | churn DIR [--marker PATH] | duplicate")
        exit(64)
    }
} catch {
    complain("Error: \(error)")
    exit(1)
}
