import Foundation
import Testing

/// The sample app uses AppVersions: its greeting knows a first run from an upgrade, and its
/// notes move from format 1 (1.1.0) to format 2 (1.2.0) once, by a migration step.
@Suite struct SampleAppVersionsTests {
    @Test func greetingSaysFirstRunThenWelcomeBack() throws {
        let t = try TestBundle()
        #expect(try t.launcher().stdout == t.greeting(.current) + ": first run.\n")
        #expect(try t.launcher().stdout == t.greeting(.current) + ": welcome back.\n")
    }

    @Test func notesWrittenByThePreviousReleaseAreMigratedOnce() throws {
        let t = try TestBundle()
        let previous = ["SWITCHBACK_SLOT": "previous"]
        #expect(try t.launcher("note", "add", "written by 1.1.0", environment: previous).status == 0)
        #expect(try t.launcher("note", "add", "second old note", environment: previous).status == 0)
        #expect(FileManager.default.fileExists(atPath: t.state + "/data/notes.txt"))

        #expect(try t.launcher().stdout == t.greeting(.current) + ": upgraded from 1.1.0.\n")
        #expect(try t.launcher("note", "add", "written by 1.2.0").status == 0)
        #expect(try t.launcher("note", "list").stdout == "written by 1.1.0\nsecond old note\nwritten by 1.2.0\n")
        #expect(!FileManager.default.fileExists(atPath: t.state + "/data/notes.txt"))
        let v2 = try String(contentsOfFile: t.state + "/data/notes.v2", encoding: .utf8)
        #expect(v2.hasPrefix("switchback-notes 2\n"))
    }

    @Test func aDamagedLedgerIsReportedNotCrashedOn() throws {
        let t = try TestBundle()
        #expect(try t.launcher().status == 0)
        let ledgers = try FileManager.default.contentsOfDirectory(atPath: t.state + "/data.versions")
        for ledger in ledgers where !ledger.hasPrefix(".") && !ledger.hasSuffix(".lock") {
            try Data("garbage\u{0}\u{1}".utf8).write(to: URL(fileURLWithPath: t.state + "/data.versions/" + ledger))
        }
        let result = try t.launcher()
        #expect(result.status == 1)
        #expect(!result.signaled)
        #expect(result.stderr.hasPrefix("Error: the app (version \(t.currentVersion)) could not prepare its data in \(t.state)/data: "))
    }
}
