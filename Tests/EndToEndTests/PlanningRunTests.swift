import Foundation
import SwitchbackCore
import Testing

/// The planning run through the real launcher and slots: `bin/launcher` with
/// `SWITCHBACK_PLAN_STEPS=<slot>` says which data steps that slot would run at its start,
/// with their reader floors, and runs none (`PendingSteps.query` is how the supervisor asks).
/// The sample's notes: `create-notes-store` on a first install, `notes-v2` (1.2.0, reader
/// floor 1.2.0) on data 1.1.0 wrote in format 1.
@Suite struct PlanningRunTests {
    static let plan = ["SWITCHBACK_PLAN_STEPS": "current"]

    func query(_ t: TestBundle, _ slot: BuildSlot = .current, deadlineMilliseconds: Int = 30_000) throws -> Result<[PendingStep]?, SwitchbackError> {
        PendingSteps.query(bundleRoot: t.bundle, manifest: try Manifest.load(bundleRoot: t.bundle),
                           directory: StateDirectory(path: t.state), slot: slot, deadlineMilliseconds: deadlineMilliseconds)
    }

    /// The data, its ledger and the published data state, with their contents.
    static func dataFiles(_ t: TestBundle) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for top in ["data", "data.versions", "data-state", "data.lock"] {
            let path = t.state + "/" + top
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            guard isDirectory.boolValue else { result[top] = try Data(contentsOf: URL(fileURLWithPath: path)); continue }
            result[top] = Data()
            let enumerator = FileManager.default.enumerator(atPath: path)
            while let relative = enumerator?.nextObject() as? String {
                let full = path + "/" + relative
                _ = FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory)
                result[top + "/" + relative] = isDirectory.boolValue ? Data() : try Data(contentsOf: URL(fileURLWithPath: full))
            }
        }
        return result
    }

    @Test func aFreshInstallPlansItsFirstInstallStepAndCreatesNoData() throws {
        let t = try TestBundle()
        let answer = try t.launcher(environment: Self.plan)
        #expect(answer.status == 0, "\(answer)")
        #expect(answer.stdout == "step create-notes-store - \(t.currentVersion)\ndone\n")
        #expect(try query(t).get() == [PendingStep(name: "create-notes-store", version: "", readerFloor: t.currentVersion)])
        #expect(try Self.dataFiles(t).isEmpty, "no data directory, ledger, lock or data state")
    }

    @Test func notesThePreviousReleaseWrotePlanNotesV2AndStayAsTheyAre() throws {
        let t = try TestBundle()
        for note in ["one", "two"] {
            #expect(try t.launcher("note", "add", note, environment: ["SWITCHBACK_SLOT": "previous"]).status == 0)
        }
        let before = try Self.dataFiles(t)
        let history = try t.history()
        #expect(before.keys.contains("data/notes.txt"))

        let answer = try t.launcher(environment: Self.plan)
        #expect(answer.stdout == "step notes-v2 1.2.0 1.2.0\ndone\n", "\(answer)")
        #expect(try query(t).get() == [PendingStep(name: "notes-v2", version: "1.2.0", readerFloor: "1.2.0")])
        #expect(try Self.dataFiles(t) == before, "nothing written: not the notes, the ledger, the lock or the data state")
        #expect(try t.history().count == history.count, "the history is untouched")

        // The start then does what the plan said; after it, nothing is pending.
        #expect(try t.launcher().stdout == t.greeting(.current) + ": upgraded from 1.1.0.\n")
        #expect(try query(t).get() == [])
        #expect(try t.launcher(environment: Self.plan).stdout == "done\n")
    }

    @Test func thePreviousReleasePredatesThePlanningEntryPoint() throws {
        let t = try TestBundle()
        let answer = try t.launcher(environment: ["SWITCHBACK_PLAN_STEPS": "previous"])
        #expect(answer.status == 0 && answer.stdout == "unknown\n", "\(answer)")
        #expect(try query(t, .previous).get() == nil)
    }

    @Test func aSlotNameThatIsNotOneIsRefused() throws {
        let t = try TestBundle()
        let answer = try t.launcher(environment: ["SWITCHBACK_PLAN_STEPS": "sideways"])
        #expect(answer.status == 70)
        #expect(answer.stdout == "message=SWITCHBACK_PLAN_STEPS must be 'current' or 'previous', not 'sideways'.\n")
    }

    // MARK: - Slots whose planning run misbehaves

    /// Replaces the current slot with a C library that passes the launcher's checks and whose
    /// planning entry point runs `body`.
    func bundle(withPlanningEntryPoint body: String) throws -> TestBundle {
        let t = try TestBundle()
        let path = t.slotPath(.current)
        try FileManager.default.removeItem(atPath: path)
        try compileSharedLibrary("""
            #include <signal.h>
            #include <stdio.h>
            #include <unistd.h>
            const char *switchback_abi_stamp(void) { return "\(try t.manifestValue("current.abi"))"; }
            int switchback_main(int c, char **v, char **e, const void *x) { return 0; }
            int switchback_pending_steps(int fd, const void *context) { \(body) }
            """, to: path)
        try t.acceptSlotFileInManifest(.current)
        return t
    }

    func failure(_ result: Result<[PendingStep]?, SwitchbackError>) -> SwitchbackError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    @Test func whatTheAppPrintsWhileItPlansIsNeverTakenForAStep() throws {
        let t = try bundle(withPlanningEntryPoint: #"puts("registering migrations"); fflush(stdout); dprintf(fd, "%s", "step tags%20file 1.2.0 1.0.0\n"); return 0;"#)
        let answer = try t.launcher(environment: Self.plan)
        #expect(answer.stdout == "step tags%20file 1.2.0 1.0.0\ndone\n")
        #expect(answer.stderr.contains("registering migrations"))
        #expect(try query(t).get() == [PendingStep(name: "tags file", version: "1.2.0", readerFloor: "1.0.0")])
    }

    @Test func garbageOnTheReportIsAFailureThatQuotesIt() throws {
        let t = try bundle(withPlanningEntryPoint: #"dprintf(fd, "Loading notes...\n"); return 0;"#)
        let error = try #require(failure(try query(t)))
        #expect(error.code == .planningFailed)
        #expect(error.message == "The planning run of the current build (\(t.currentVersion)) printed 'Loading notes...', which is not a step; until it answers, a switch to it stops the serving build first.")
    }

    @Test func aPlanningRunThatHangsIsKilledAtTheDeadline() throws {
        let t = try bundle(withPlanningEntryPoint: "for (;;) pause();")
        let started = Date()
        let error = try #require(failure(try query(t, deadlineMilliseconds: 1_000)))
        #expect(error.message.hasPrefix("The planning run of the current build (\(t.currentVersion)) did not answer within 1000 ms and was killed"))
        #expect(Date().timeIntervalSince(started) < 60)
    }

    @Test func aPlanningRunThatCrashesIsAFailureNotACrashOfTheCaller() throws {
        let t = try bundle(withPlanningEntryPoint: "raise(SIGSEGV); return 0;")
        let error = try #require(failure(try query(t)))
        #expect(error.message.hasPrefix("The planning run of the current build (\(t.currentVersion)) was killed by signal 11"), "\(error)")
        let failed = try bundle(withPlanningEntryPoint: #"dprintf(fd, "message=the ledger is damaged\n"); return 1;"#)
        let said = try #require(failure(try query(failed)))
        #expect(said.message == "The planning run of the current build (\(failed.currentVersion)) failed: the ledger is damaged; until it answers, a switch to it stops the serving build first.")
    }
}
