import Foundation
import CSwitchbackContract
import Testing
@testable import Switchback
@testable import SwitchbackCore

/// The planning entry point, `switchback_pending_steps`: the steps the next start would run,
/// with their reader floors, worked out from the app's registered migrations and the ledger
/// without running any and without writing anything (another build may be serving the data).
extension SDKTests {
    /// Every file and directory under `path`, with its contents.
    static func tree(_ path: String) throws -> [String: String] {
        var result: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let relative = enumerator?.nextObject() as? String {
            let full = path + "/" + relative
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory)
            result[relative] = isDirectory.boolValue ? "(directory)" : try String(contentsOfFile: full, encoding: .isoLatin1)
        }
        return result
    }

    func pendingSteps(_ launcher: FakeLauncher) -> (Int32, String) {
        launcher.withContext { context in withReportPipe { fd in _switchbackPendingSteps(fd, context) } }
    }

    @Test func aFreshInstallPlansItsFirstInstallStepAndCreatesNothing() throws {
        let state = try temporaryDirectory()
        Switchback.register(NotesApp.self)
        let launcher = FakeLauncher(stateDirectory: state, slot: .current)
        let (code, report) = pendingSteps(launcher)
        #expect(code == SWITCHBACK_PENDING_STEPS_DONE)
        // No version step: the data a first install creates is the running version's.
        #expect(report == "step create-store - 0.0.0-dev\n")
        #expect(try Self.tree(state).isEmpty, "no data directory, no ledger, no lock, no data state")
    }

    @Test func pendingStepsComeFromTheLedgerAndNothingIsWritten() throws {
        let state = try temporaryDirectory()
        Switchback.register(NotesApp.self)
        let launcher = FakeLauncher(stateDirectory: state, slot: .current)
        // Data from before AppVersions (the baseline says 0.0.0-alpha): store-v2 is due, and
        // only 0.0.0-dev reads its result.
        mkdir(state + "/data", 0o700)
        try "format 1\n".write(toFile: state + "/data/store", atomically: true, encoding: .utf8)
        NotesApp.withFormat2.withLock { $0 = true }
        defer { NotesApp.withFormat2.withLock { $0 = false } }
        let before = try Self.tree(state)
        let (code, report) = pendingSteps(launcher)
        #expect(code == SWITCHBACK_PENDING_STEPS_DONE)
        #expect(report == "step store-v2 0.0.0-dev 0.0.0-dev\n")
        #expect(try Self.tree(state) == before, "the state directory is byte for byte as it was")
        #expect(try String(contentsOfFile: state + "/data/store", encoding: .utf8) == "format 1\n")

        // Once a start ran it, nothing is pending.
        #expect(launcher.withContext { Runner.run(arguments: [], context: $0) } == 0)
        #expect(try String(contentsOfFile: state + "/data/store", encoding: .utf8) == "format 2\n")
        #expect(pendingSteps(launcher) == (SWITCHBACK_PENDING_STEPS_DONE, ""))
    }

    @Test func aPlanWhoseMigrationsCannotBeRegisteredFailsWithASentence() throws {
        Switchback.register(BrokenMigrationsApp.self)
        let state = try temporaryDirectory()
        let (code, report) = pendingSteps(FakeLauncher(stateDirectory: state, slot: .current))
        #expect(code == SWITCHBACK_PENDING_STEPS_FAILED)
        #expect(report == "message=the migrations of version 0.0.0-dev could not be planned in \(state)/data: the notes directory is unreadable\n")
    }

    @Test func theReportsEncodingIsWhatTheLauncherSideDecodes() throws {
        let names = ["plain", "with space", "-", "100%", "tab\there", "new\nline", "ünï", "%2D", "a-b"]
        for name in names {
            let line = PendingStepsReport.line(name: name, version: "", readerFloor: "1.2.0-rc.1")
            #expect(!line.contains("\n") && line.split(separator: " ").count == 4, "\(name)")
            let parsed = try PendingSteps.parse(Array((line + "\ndone\n").utf8)).get()
            #expect(parsed == [PendingStep(name: name, version: "", readerFloor: "1.2.0-rc.1")], "\(name)")
        }
    }
}
