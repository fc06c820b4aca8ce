import Foundation
import Testing
@testable import SwitchbackCore

/// The pure parts of data-safe rollback: the downgrade child's report, version order, and
/// the data state the app publishes.
@Suite struct DataDowngradeTests {
    @Test func theReportIsParsedLineByLine() {
        let report = """
            undone=revert\tnotes-v3\t
            undone=restore\tnotes-v2\t/var/archive/a b
            undone=restore\tcovered\t
            undone=sideways\tbogus\t
            reader_floor=1.1.0
            message=all fine
            noise without an equals sign

            """
        let outcome = DataDowngrade.parse(Array(report.utf8))
        #expect(outcome.undone == [
            .init(method: .revert, step: "notes-v3", archive: nil),
            .init(method: .restore, step: "notes-v2", archive: "/var/archive/a b"),
            .init(method: .restore, step: "covered", archive: nil),
        ])
        #expect(outcome.readerFloor == "1.1.0")
        #expect(outcome.message == "all fine")
    }

    @Test func aDowngradeThatSaysDoneWithTheFloorStillAboveThePreviousVersionFailed() {
        let slot = { (version: String) in Manifest.SlotRecord(version: version, build: "b", abiStamp: "a", size: 1, sha256: "s") }
        let downgrade = DataDowngrade(bundleRoot: "/b", manifest: Manifest(appID: "id", current: slot("1.2.0"), previous: slot("1.1.0")),
                                      directory: StateDirectory(path: "/s"))
        var outcome = DataDowngrade.parse(Array("reader_floor=1.2.0\n".utf8))
        outcome.status = .done
        let checked = downgrade.checked(outcome)
        #expect(checked.status == .failed)
        #expect(checked.message == "the current build's downgrade said it was done, but the data's reader floor is still 1.2.0")
        for floor in ["1.1.0", "1.0.0", ""] {
            outcome.readerFloor = floor
            #expect(downgrade.checked(outcome).status == .done, "floor \(floor)")
        }
    }

    @Test func anEmptyReportSaysNothing() {
        let outcome = DataDowngrade.parse([])
        #expect(outcome.undone.isEmpty && outcome.readerFloor == nil && outcome.message == nil)
    }

    @Test(arguments: [
        ("1.2.0", "1.1.0", 1), ("1.1.0", "1.2.0", -1), ("1.2", "1.2.0", 0), ("1.10.0", "1.9.0", 1),
        ("2.0.0-rc.1", "2.0.0", -1), ("2.0.0", "2.0.0-rc.1", 1), ("2.0.0-alpha", "2.0.0-beta", -1),
        ("1.2.0+build.7", "1.2.0", 0),
    ])
    func versionsCompareByNumberThenPreRelease(a: String, b: String, expected: Int) {
        #expect(DottedVersion.compare(a, b) == expected)
    }

    func write(_ text: String) throws -> StateDirectory {
        let path = NSTemporaryDirectory() + "switchback-data-state-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try text.write(toFile: path + "/data-state", atomically: true, encoding: .utf8)
        return StateDirectory(path: path)
    }

    @Test func aPublishedStateIsRead() throws {
        let directory = try write("""
            published_by=1.2.0
            published_at=1795326000
            reader_floor=1.2.0
            rollback_to=1.1.0
            rollback=revert
            detail=the revert of notes-v2 runs first
            end=ok

            """)
        let state = try #require(DataState.load(in: directory))
        #expect(state.readerFloor == "1.2.0" && state.plan == .revert && state.isRollbackDataSafe)
        #expect(!state.isReadable(by: "1.1.0"))
        #expect(state.isReadable(by: "1.2.0"))
    }

    @Test func noFloorIsReadableByAnyVersionAndRefusedIsNotSafe() throws {
        let directory = try write("published_by=1.2.0\nreader_floor=\nrollback_to=1.1.0\nrollback=refused\nend=ok\n")
        let state = try #require(DataState.load(in: directory))
        #expect(state.readerFloor == nil && state.isReadable(by: "0.1.0"))
        #expect(!state.isRollbackDataSafe)
    }

    @Test(arguments: [
        "published_by=1.2.0\nreader_floor=1.2.0\nrollback_to=1.1.0\nrollback=revert\n",   // torn: no end=ok
        "published_by=1.2.0\nreader_floor=1.2.0\nrollback_to=1.1.0\nrollback=maybe\nend=ok\n",
        "\u{0}\u{1}garbage",
        "",
    ])
    func aTornOrForeignFileCountsAsNone(text: String) throws {
        #expect(DataState.load(in: try write(text)) == nil)
    }
}
