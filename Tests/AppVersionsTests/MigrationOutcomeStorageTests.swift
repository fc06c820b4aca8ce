import AppVersions
import Foundation
import Testing

@Suite("Storage of migration outcomes")
final class MigrationOutcomeStorageTests {
    let directory = TemporaryDirectory()

    deinit { directory.remove() }

    @Test func failedAndAbandonedStepsReadBackFromTheFile() throws {
        let running = RunningVersion(version: "1.2.0", build: "b")
        func migrator(failing: Bool) -> Migrator {
            var migrator = Migrator(store: FileLedgerStore(directory: directory.path))
            migrator.baseline = { _ in "1.0.0" }
            migrator.register("optional", at: "1.1.0", onError: .continue) { _ in throw TestFailure("tab\there") }
            migrator.register("required", at: "1.2.0", onError: .stop) { _ in
                if failing { throw TestFailure("line\nbreak") }
            }
            return migrator
        }
        let error = #expect(throws: AppVersionsError.self) { try migrator(failing: true).run(for: running) }
        #expect(error?.code == .stepFailed)
        // A new process (a new store over the same files) sees the same decisions.
        let plan = try migrator(failing: false).plan(for: running)
        #expect(plan.steps == ["required"])
        #expect(plan.interrupted.isEmpty)
        #expect(try migrator(failing: false).run(for: running).ran == ["required"])
        #expect(try migrator(failing: false).plan(for: running).isUpToDate)
        let lines = try FileLedgerStore(directory: directory.path).entries(in: .app).map(\.line)
        #expect(lines.contains { $0.hasSuffix("\toptional\t1.2.0\tb\tfailed\ttab\\there") })
        #expect(lines.contains { $0.hasSuffix("\trequired\t1.2.0\tb\tabandoned\tline\\nbreak") })
    }
}
