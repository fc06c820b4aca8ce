import Foundation
import Synchronization
import CSwitchbackContract
import SwitchbackCore
import Testing
@testable import Switchback

/// The SDK in-process, with a launcher context made here: registration, sync and async
/// apps, the launch info, the good mark from many threads, migrations before `main`, the
/// data lock and the downgrade entry point. Serialized: the registered app is process-wide.
@Suite(.serialized)
struct SDKTests {
    @Test func aLibraryWithoutItsRegistrationLineExits70AndSaysWhichLineToAdd() throws {
        RegisteredApp.reset()
        let (code, stderr) = try capturingStandardError { Runner.run(arguments: [], context: nil) }
        #expect(code == 70)
        #expect(stderr == Runner.missingRegistration + "\n")
        #expect(stderr.contains(#"@_cdecl("switchback_register") public func switchbackRegister() { Switchback.register(YourApp.self) }"#))
    }

    @Test func aSyncAppGetsItsArgumentsAndReturnsItsExitCode() throws {
        let data = try temporaryDirectory()
        do {
            Switchback.register(EchoApp.self)
            #expect(Runner.run(arguments: ["exit", "7"], context: nil, dataDirectory: data) == 7)
            let launch = try #require(EchoApp.last.withLock { $0 })
            #expect(launch.arguments == ["exit", "7"])
            #expect(launch.slot == nil && !launch.isUnderLauncher)
            #expect(launch.stateDirectory == nil && launch.otherVersion == nil)
            #expect(launch.version == "0.0.0-dev" && launch.build == "dev")
            #expect(launch.dataDirectory == data)
        }
    }

    @Test func anAsyncAppRunsOnSwiftConcurrencyAndAThrownErrorExits1() throws {
        let data = try temporaryDirectory()
        do {
            Switchback.register(AsyncApp.self)
            #expect(Runner.run(arguments: ["42"], context: nil, dataDirectory: data) == 42)
            let (code, stderr) = try capturingStandardError { Runner.run(arguments: ["throw"], context: nil, dataDirectory: data) }
            #expect(code == 1)
            #expect(stderr == "Error: the async app failed on purpose\n")
        }
    }

    /// Off the main thread (a test's), the main actor is whatever drains it in this process
    /// (the test runner's own async main); the launcher's thread drains it itself
    /// (MainActorTests, end to end).
    @Test func anAsyncAppsMainIsIsolatedToTheMainActorAndAwaitsMainActorWork() throws {
        let data = try temporaryDirectory()
        Switchback.register(MainActorApp.self)
        #expect(Runner.run(arguments: [], context: nil, dataDirectory: data) == 9)
    }

    @Test func theDataDirectoryIsTheOverrideThenTheStateDirectorysThenTheWorkingDirectorys() {
        #expect(LaunchInfo.dataDirectory(override: "/srv/notes", stateDirectory: "/var/lib/x") == "/srv/notes")
        #expect(LaunchInfo.dataDirectory(override: "", stateDirectory: "/var/lib/x") == "/var/lib/x/data")
        #expect(LaunchInfo.dataDirectory(override: nil, stateDirectory: nil) == FileManager.default.currentDirectoryPath + "/.switchback/data")
    }

    @Test func underTheLauncherTheContextNamesSlotVersionsAndStateDirectory() throws {
        let state = try temporaryDirectory()
        Switchback.register(EchoApp.self)
        let code = FakeLauncher(stateDirectory: state, slot: .previous).withContext { Runner.run(arguments: [], context: $0) }
        #expect(code == 0)
        let launch = try #require(EchoApp.last.withLock { $0 })
        #expect(launch.slot == .previous && launch.isUnderLauncher)
        #expect(launch.otherVersion == "0.0.0-alpha")
        #expect(launch.stateDirectory == state)
        #expect(launch.dataDirectory == state + "/data")
    }

    @Test func markGoodReachesTheLauncherOnceFromAHundredConcurrentTasks() async throws {
        let launcher = FakeLauncher(stateDirectory: try temporaryDirectory(), slot: .current)
        FakeLauncher.goodMarks.withLock { $0 = 0 }
        let launch = LaunchInfo(arguments: [], context: launcher.context)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { launch.markGood() } }
        }
        launch.markGood()
        withExtendedLifetime(launcher) {}
        #expect(FakeLauncher.goodMarks.withLock { $0 } == 1)
    }

    @Test func aGoodMarkTheLauncherCouldNotWriteIsTriedAgainByTheNextCall() throws {
        let launcher = FakeLauncher(stateDirectory: try temporaryDirectory(), slot: .current, failing: true)
        FakeLauncher.goodMarks.withLock { $0 = 0 }
        launcher.withContext { context in
            let launch = LaunchInfo(arguments: [], context: context)
            launch.markGood()
            launch.markGood()
        }
        #expect(FakeLauncher.goodMarks.withLock { $0 } == 2)
    }

    @Test func migrationsRunOnceBeforeMainAndTheChangeIsReported() throws {
        let state = try temporaryDirectory()
        Switchback.register(NotesApp.self)
        let launcher = FakeLauncher(stateDirectory: state, slot: .current)
        #expect(launcher.withContext { Runner.run(arguments: [], context: $0) } == 0)
        #expect(try String(contentsOfFile: state + "/data/store", encoding: .utf8) == "format 1\n")
        #expect(NotesApp.seen.withLock { $0 } == "installed")
        #expect(launcher.withContext { Runner.run(arguments: [], context: $0) } == 0)
        #expect(NotesApp.seen.withLock { $0 } == "notChanged")
        // The current slot publishes what a rollback to 0.0.0-alpha would do, naming its build.
        let published = try String(contentsOfFile: state + "/data-state", encoding: .utf8)
        #expect(published.contains("published_by=0.0.0-dev\npublished_build=dev\n"))
        #expect(published.contains("rollback_to=0.0.0-alpha\nrollback=none\n"))
        // What the launcher and rollbackctl read from it (SwitchbackCore's parser).
        let parsed = try DataState.parse(Array(published.utf8), path: state + "/data-state")
        #expect(parsed.publishedBy == "0.0.0-dev" && parsed.publishedBuild == "dev")
        #expect(parsed.rollbackTo == "0.0.0-alpha" && parsed.plan == .none && parsed.readerFloor == nil)
    }

    @Test func thePublishersEscapingIsTheStateFilesEscaping() {
        for text in ["plain", "a\\b", "line\nbreak", "tab\there", "cr\r\nlf", "ünï \\n literal"] {
            #expect(DataStatePublisher.escape(text) == KeyValueText.escape(text), "\(text)")
            #expect(KeyValueText.unescape(DataStatePublisher.escape(text)) == text, "\(text)")
        }
    }

    @Test func aDowngradeWhoseMigrationsCannotBeRegisteredFailsWithASentence() throws {
        Switchback.register(BrokenMigrationsApp.self)
        let launcher = FakeLauncher(stateDirectory: try temporaryDirectory(), slot: .current)
        let (code, report) = launcher.withContext { context in
            withReportPipe { fd in _switchbackDowngrade("0.0.0-alpha", 0, fd, context) }
        }
        #expect(code == SWITCHBACK_DOWNGRADE_FAILED)
        #expect(report == "message=the app's migrations could not be registered: the notes directory is unreadable\n")
    }

    @Test func aRunThatHoldsTheDataLockKeepsADowngradeWaiting() throws {
        let data = try temporaryDirectory()
        do {
            Switchback.register(LockProbeApp.self)
            #expect(Runner.run(arguments: ["hold"], context: nil, dataDirectory: data) == 0)
            #expect(LockProbeApp.exclusiveWasFree.withLock { $0 } == false)
            #expect(Runner.run(arguments: [], context: nil, dataDirectory: data) == 0)
            #expect(LockProbeApp.exclusiveWasFree.withLock { $0 } == true)
        }
    }

    @Test func theDowngradeEntryPointRevertsAndReportsEachStep() throws {
        let state = try temporaryDirectory()
        Switchback.register(NotesApp.self)
        let launcher = FakeLauncher(stateDirectory: state, slot: .current)
        let store = state + "/data/store"
        // Data from before AppVersions (the baseline says 0.0.0-alpha): the step for 0.0.0-dev
        // runs at the first start (format 2, readable from 0.0.0-dev on).
        mkdir(state + "/data", 0o700)
        try "format 1\n".write(toFile: store, atomically: true, encoding: .utf8)
        NotesApp.withFormat2.withLock { $0 = true }
        defer { NotesApp.withFormat2.withLock { $0 = false } }
        #expect(launcher.withContext { Runner.run(arguments: [], context: $0) } == 0)
        #expect(try String(contentsOfFile: store, encoding: .utf8) == "format 2\n")
        #expect(try String(contentsOfFile: state + "/data-state", encoding: .utf8).contains("reader_floor=0.0.0-dev\nrollback_to=0.0.0-alpha\nrollback=revert\n"))
        let (code, report) = launcher.withContext { context in
            withReportPipe { fd in _switchbackDowngrade("0.0.0-alpha", 0, fd, context) }
        }
        #expect(code == SWITCHBACK_DOWNGRADE_DONE)
        #expect(report == "undone=revert\tstore-v2\t\nreader_floor=\n")
        #expect(try String(contentsOfFile: store, encoding: .utf8) == "format 1\n")
    }

    @Test func aDowngradeTargetThatIsNotAVersionFailsWithASentence() throws {
        Switchback.register(NotesApp.self)
        let launcher = FakeLauncher(stateDirectory: try temporaryDirectory(), slot: .current)
        let (code, report) = launcher.withContext { context in
            withReportPipe { fd in _switchbackDowngrade("not a version", 0, fd, context) }
        }
        #expect(code == SWITCHBACK_DOWNGRADE_FAILED)
        #expect(report == "message=The downgrade target not a version is not a version.\n")
    }

    @Test func anAppsUnitTestMakesItsOwnLaunchInfo() throws {
        let launch = LaunchInfo(arguments: ["serve"], dataDirectory: "/tmp/notes-test", version: "2.0.0", otherVersion: "1.0.0")
        #expect(launch.arguments == ["serve"] && launch.dataDirectory == "/tmp/notes-test")
        #expect(launch.version == "2.0.0" && launch.otherVersion == "1.0.0" && launch.build == "dev")
        #expect(launch.slot == nil && launch.stateDirectory == nil)
        launch.markGood()
    }

    @Test func theAsyncDataLockWaitsForAnExclusiveHolderWithoutBlockingAThread() async throws {
        let data = try temporaryDirectory() + "/data"
        let launch = LaunchInfo(dataDirectory: data)
        mkdir(data, 0o700)
        let holder = open(data + ".lock", O_RDWR | O_CREAT, 0o600)
        #expect(flock(holder, LOCK_EX) == 0)
        let entered = Mutex(false)
        let writer = Task { await launch.withDataLock { entered.withLock { $0 = true } } }
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(entered.withLock { $0 } == false)
        close(holder)
        await writer.value
        #expect(entered.withLock { $0 } == true)
    }

    @Test func aDowngradeGivesUpWhenARunningProcessHoldsTheDataLock() throws {
        let state = try temporaryDirectory()
        Switchback.register(NotesApp.self)
        let launcher = FakeLauncher(stateDirectory: state, slot: .current)
        mkdir(state + "/data", 0o700)
        let holder = open(state + "/data.lock", O_RDWR | O_CREAT, 0o600)
        defer { close(holder) }
        #expect(flock(holder, LOCK_SH) == 0)
        let (code, report) = launcher.withContext { context in
            withReportPipe { fd in _switchbackDowngrade("0.0.0-alpha", 0, fd, context) }
        }
        #expect(code == SWITCHBACK_DOWNGRADE_FAILED)
        #expect(report == "message=the app's data is in use: a running process of the app has held \(state)/data.lock for 10 s; stop it, then retry\n")
    }
}

// MARK: - Apps

enum EchoApp: SwitchbackApp {
    static let last = Mutex<LaunchInfo?>(nil)
    static func main(_ launch: LaunchInfo) -> Int32 {
        last.withLock { $0 = launch }
        return launch.arguments.first == "exit" ? Int32(launch.arguments[1])! : 0
    }
}

enum AsyncApp: AsyncSwitchbackApp {
    struct Failure: Error, CustomStringConvertible { var description: String { "the async app failed on purpose" } }
    static func main(_ launch: LaunchInfo) async throws -> Int32 {
        try await Task.sleep(nanoseconds: 1_000_000)
        if launch.arguments.first == "throw" { throw Failure() }
        return Int32(launch.arguments.first ?? "") ?? 0
    }
}

/// `main` takes the requirement's isolation: a synchronous `@MainActor` call needs no `await`.
enum MainActorApp: AsyncSwitchbackApp {
    static func main(_ launch: LaunchInfo) async throws -> Int32 {
        MainActor.assertIsolated("main runs on the main actor")
        let four: Int32 = await MainActor.run { 4 }
        return four + five() + (await zeroAfterAHop())
    }

    @MainActor static func five() -> Int32 { 5 }
    @MainActor static func zeroAfterAHop() async -> Int32 {
        await Task.yield()
        MainActor.assertIsolated()
        return 0
    }
}

enum NotesApp: SwitchbackApp {
    static let seen = Mutex("")
    static let withFormat2 = Mutex(false)
    static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {
        let store = launch.dataDirectory + "/store"
        migrator.baseline = { _ in FileManager.default.fileExists(atPath: store) ? try Version(tolerant: "0.0.0-alpha") : nil }
        migrator.registerFirstInstall("create-store") { _ in try "format 1\n".write(toFile: store, atomically: true, encoding: .utf8) }
        if withFormat2.withLock({ $0 }) {
            migrator.register("store-v2", at: "0.0.0-dev", readerFloor: "0.0.0-dev", revert: { _ in
                try "format 1\n".write(toFile: store, atomically: true, encoding: .utf8)
            }) { _ in try "format 2\n".write(toFile: store, atomically: true, encoding: .utf8) }
        }
    }
    static func main(_ launch: LaunchInfo) -> Int32 {
        seen.withLock { $0 = "\(launch.versionChange)" }
        return 0
    }
}

enum BrokenMigrationsApp: SwitchbackApp {
    struct Unreadable: Error, CustomStringConvertible { var description: String { "the notes directory is unreadable" } }
    static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws { throw Unreadable() }
    static func main(_ launch: LaunchInfo) -> Int32 { 0 }
}

enum LockProbeApp: SwitchbackApp {
    static let exclusiveWasFree = Mutex<Bool?>(nil)
    static func holdsDataLock(_ launch: LaunchInfo) -> Bool { launch.arguments.first == "hold" }
    static func main(_ launch: LaunchInfo) -> Int32 {
        let fd = open(launch.dataDirectory + ".lock", O_RDWR | O_CREAT, 0o600)
        defer { close(fd) }
        let free = flock(fd, LOCK_EX | LOCK_NB) == 0
        exclusiveWasFree.withLock { $0 = free }
        return 0
    }
}

// MARK: - Support

/// A launcher context made in the test, with a `mark_good` that counts its calls.
final class FakeLauncher: @unchecked Sendable {
    static let goodMarks = Mutex(0)
    /// Valid as long as this value lives.
    let context: UnsafeMutablePointer<SwitchbackContext>
    private let strings: [UnsafeMutablePointer<CChar>]

    init(stateDirectory: String, slot: LaunchInfo.Slot, failing: Bool = false) {
        strings = [strdup(stateDirectory)!, strdup("0.0.0-dev")!, strdup("0.0.0-alpha")!]
        let markGood: SwitchbackMarkGood = failing
            ? { _ in FakeLauncher.goodMarks.withLock { $0 += 1 }; return -1 }
            : { _ in FakeLauncher.goodMarks.withLock { $0 += 1 }; return 0 }
        context = .allocate(capacity: 1)
        context.initialize(to: SwitchbackContext(
            contract_version: UInt32(SWITCHBACK_CONTRACT_VERSION), size: UInt32(MemoryLayout<SwitchbackContext>.size),
            slot: slot == .previous ? Int32(SWITCHBACK_SLOT_PREVIOUS.rawValue) : Int32(SWITCHBACK_SLOT_CURRENT.rawValue),
            reserved: 0, slot_version: UnsafePointer(strings[1]), other_slot_version: UnsafePointer(strings[2]),
            state_directory: UnsafePointer(strings[0]), mark_good: markGood, launcher_data: nil))
    }

    deinit {
        context.deallocate()
        strings.forEach { free($0) }
    }

    func withContext<T>(_ body: (UnsafePointer<SwitchbackContext>) throws -> T) rethrows -> T {
        try withExtendedLifetime(self) { try body(context) }
    }
}

func temporaryDirectory() throws -> String {
    var template = Array((NSTemporaryDirectory() + "switchback-sdk-XXXXXX").utf8CString)
    guard let path = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
    return String(cString: path)
}

/// Runs `body` with the SDK's error output sent to a file, and returns what it wrote there
/// (the test process's own stderr is left alone: other tests print to it meanwhile).
func capturingStandardError<T>(_ body: () throws -> T) throws -> (T, String) {
    let path = try temporaryDirectory() + "/stderr"
    let file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
    SDKFiles.standardError.withLock { $0 = file }
    defer { SDKFiles.standardError.withLock { $0 = 2 }; close(file) }
    let result = try body()
    return (result, try String(contentsOfFile: path, encoding: .utf8))
}

/// Runs `body` with the write end of a pipe, and returns its result and what it wrote.
func withReportPipe(_ body: (Int32) -> Int32) -> (Int32, String) {
    var fds: [Int32] = [0, 0]
    pipe(&fds)
    let code = body(fds[1])
    close(fds[1])
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(fds[0], &buffer, buffer.count)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    close(fds[0])
    return (code, String(decoding: bytes, as: UTF8.self))
}
