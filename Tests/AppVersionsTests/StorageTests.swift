@testable import AppVersions
import Foundation
import Testing

@Suite("Storage")
final class StorageTests {
    let directory = TemporaryDirectory()

    deinit { directory.remove() }
    let clock = TestClock()

    func filledStore() throws -> FileLedgerStore {
        let store = FileLedgerStore(directory: directory.path + "/nested/versions")
        let tracker = VersionTracker(store: store, osReleasePath: nil, now: clock.reader)
        try tracker.record(RunningVersion(version: "1.0.0", build: "tab\there"), slot: "line\nbreak \\ slash")
        clock.advance()
        try tracker.record(RunningVersion(version: "1.1.0-rc.1+meta", build: "ünïcødé"), slot: nil)
        return store
    }

    @Test func aMissingLedgerIsAFirstStartNotAnError() throws {
        let store = FileLedgerStore(directory: directory.path + "/does/not/exist")
        #expect(try store.entries(in: .app).isEmpty)
        #expect(try VersionTracker(store: store, osReleasePath: nil).history().isEmpty)
    }

    @Test func roundTripsEveryFieldThroughTheFile() throws {
        let store = try filledStore()
        let written = try store.entries(in: .app)
        let reread = try FileLedgerStore(directory: store.directory).entries(in: .app)
        #expect(reread == written)
        let history = try VersionTracker(store: FileLedgerStore(directory: store.directory), osReleasePath: nil).history()
        #expect(history.events.first?.running.build == "tab\there")
        #expect(history.events.first?.slot == "line\nbreak \\ slash")
        #expect(history.events.last?.running.version.isIdentical(to: "1.1.0-rc.1+meta") == true)
        #expect(history.events.last?.slot == nil)
        #expect(history.events.last?.date == clock.now)
    }

    @Test func writesOneReadableFileAndLeavesNoTemporaryFile() throws {
        let store = try filledStore()
        let files = try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted()
        #expect(files == ["scope-app.ledger", "scope-app.lock"])
        let text = try String(contentsOfFile: store.path(for: .app), encoding: .utf8)
        #expect(text.hasPrefix("appversions-ledger 1\nhistory\t"))
        #expect(text.contains("\ttab\\there\t"))
        #expect(text.hasSuffix("\n") && text.split(separator: "\n").last?.hasPrefix("end 2 ") == true)
    }

    @Test func encodesScopeNamesIntoSafeDistinctFileNames() throws {
        let store = FileLedgerStore(directory: directory.path)
        #expect(store.path(for: "user-alice@example.com") == directory.path + "/scope-user-alice%40example.com.ledger")
        #expect(store.path(for: "../etc/passwd") == directory.path + "/scope-..%2Fetc%2Fpasswd.ledger")
        #expect(store.path(for: "%41") != store.path(for: "A"))
        #expect(store.path(for: "") == directory.path + "/scope-.ledger")
        for scope: Scope in ["a/b", "ü", ""] {
            try store.append([LedgerEntry(line: "reset\t1")], to: scope)
            #expect(try store.entries(in: scope).count == 1)
        }
        try store.remove("a/b")
        #expect(try store.entries(in: "a/b").isEmpty)
    }

    func expectCorrupt(_ content: [UInt8], code: AppVersionsError.Code = .corruptLedger, mentioning words: String) throws {
        let store = FileLedgerStore(directory: directory.path)
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        try Data(content).write(to: URL(fileURLWithPath: store.path(for: .app)))
        let error = #expect(throws: AppVersionsError.self) { try store.entries(in: .app) }
        #expect(error?.code == code)
        #expect(error?.path == store.path(for: .app))
        #expect(error?.description.contains(words) == true, "\(error.map { "\($0)" } ?? "no error")")
        #expect(error?.description.contains(store.path(for: .app)) == true)
        // The tracker and the migrator throw the same error instead of crashing or starting over.
        let trackerError = #expect(throws: AppVersionsError.self) {
            try VersionTracker(store: store, osReleasePath: nil).record(RunningVersion(version: "1.0.0"))
        }
        #expect(trackerError?.code == code)
        let migratorError = #expect(throws: AppVersionsError.self) {
            try Migrator(store: store).run(for: RunningVersion(version: "1.0.0"))
        }
        #expect(migratorError?.code == code)
    }

    @Test func reportsGarbage() throws {
        var generator = SeededGenerator(seed: 7)
        try expectCorrupt((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }, mentioning: "not an AppVersions ledger")
    }

    @Test func reportsAnEmptyFile() throws {
        try expectCorrupt([], mentioning: "the file is empty")
    }

    @Test func reportsATruncatedFile() throws {
        let store = try filledStore()
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: store.path(for: .app))))
        try expectCorrupt(Array(bytes.prefix(bytes.count - 10)), mentioning: "cut off")
        try expectCorrupt(Array(bytes.prefix(60)) + [10], mentioning: "end line")
    }

    @Test func reportsAFlippedByte() throws {
        let store = try filledStore()
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: store.path(for: .app))))
        bytes[40] ^= 0x01
        try expectCorrupt(bytes, mentioning: "checksum mismatch")
    }

    @Test func reportsANewerFormat() throws {
        try expectCorrupt(Array("appversions-ledger 2\nend 0 0\n".utf8), code: .unsupportedLedgerFormat, mentioning: "uses format 2")
    }

    @Test func reportsAMalformedEntryWithItsLineNumber() throws {
        var file = "appversions-ledger 1\nreset\t1\nhistory\tnot-a-date\tinstalled\t1.0.0\tb\t\\-\t\\-\t\\-\t\\-\n"
        var checksum = LedgerChecksum()
        checksum.add(Array(file.utf8)[...])
        file += "end 2 \(String(checksum.value, radix: 16))\n"
        try expectCorrupt(Array(file.utf8), mentioning: "line 3: the date \"not-a-date\" is not a number")
    }

    @Test func keepsEntriesOfKindsItDoesNotKnow() throws {
        let store = FileLedgerStore(directory: directory.path)
        let future = try LedgerEntry(line: "snapshot\t1.5\tsome\tfuture\tfields")
        let tracker = VersionTracker(store: store, osReleasePath: nil)
        try tracker.record(RunningVersion(version: "1.0.0"))
        try store.append([future], to: .app)
        try tracker.record(RunningVersion(version: "2.0.0"))
        let entries = try FileLedgerStore(directory: directory.path).entries(in: .app)
        #expect(entries.count == 3 && entries[1] == future && entries[1].line == future.line)
        #expect(try tracker.history().events.count == 2)
        // Extra trailing fields on a known kind are ignored, for the same reason.
        let extended = try LedgerEntry(line: "reset\t12.5\tadded-later")
        #expect(extended.line == "reset\t12.5")
    }

    @Test func rejectsMalformedEntryLines() {
        for line in ["", "history\t1", "ended\t1\tstep\t1.0.0\tb\tmaybe\t\\-", "initialized\t1\t1.0\tinstall", "\tx", "began\t1\tbad\\qescape\t1.0.0\tb"] {
            let error = #expect(throws: AppVersionsError.self) { try LedgerEntry(line: line) }
            #expect(error?.code == .corruptLedger, "\(line)")
        }
    }

    @Test func entriesAreCodableAsTheirLine() throws {
        let entry = try LedgerEntry(line: "migrated\t3.5\t1.2.0\tb\\t7")
        let data = try JSONEncoder().encode([entry])
        #expect(String(decoding: data, as: UTF8.self) == #"["migrated\t3.5\t1.2.0\tb\\t7"]"#)
        #expect(try JSONDecoder().decode([LedgerEntry].self, from: data) == [entry])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([LedgerEntry].self, from: Data(#"["history"]"#.utf8)) }
    }

    @Test func reportsAnUnwritableDirectory() throws {
        try directory.write("a file, not a directory", to: "blocker")
        let store = FileLedgerStore(directory: directory.file("blocker") + "/versions")
        let error = #expect(throws: AppVersionsError.self) {
            try VersionTracker(store: store, osReleasePath: nil).record(RunningVersion(version: "1.0.0"))
        }
        #expect(error?.code == .writeFailed)
        #expect(error?.errno == ENOTDIR)
        #expect(error?.description.contains("check that the directory is writable") == true)
    }

    @Test func seesWritesFromAnotherStoreInstance() throws {
        let first = FileLedgerStore(directory: directory.path)
        let second = FileLedgerStore(directory: directory.path)
        let trackerA = VersionTracker(store: first, osReleasePath: nil)
        let trackerB = VersionTracker(store: second, osReleasePath: nil)
        try trackerA.record(RunningVersion(version: "1.0.0"))
        #expect(try trackerB.record(RunningVersion(version: "2.0.0")).changeState == .upgraded(from: RunningVersion(version: "1.0.0")))
        #expect(try trackerA.record(RunningVersion(version: "3.0.0")).changeState == .upgraded(from: RunningVersion(version: "2.0.0")))
        #expect(try first.entries(in: .app) == second.entries(in: .app))
    }

    @Test func theMemoryStoreKeepsScopesApart() {
        let store = InMemoryLedgerStore()
        store.append([try! LedgerEntry(line: "reset\t1")], to: "a")
        #expect(store.entries(in: "a").count == 1)
        #expect(store.entries(in: "b").isEmpty)
        #expect(store.scopes == ["a"])
        store.remove("a")
        #expect(store.entries(in: "a").isEmpty)
    }

    @Test func exclusiveAccessSerialisesThreads() async throws {
        let store = FileLedgerStore(directory: directory.path)
        let journal = Journal()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<4 {
                group.addTask {
                    _ = try? store.withExclusiveAccess(to: .app) {
                        journal.append("enter \(index)")
                        usleep(20_000)
                        journal.append("leave \(index)")
                    }
                }
            }
        }
        let entries = journal.entries
        #expect(entries.count == 8)
        for pair in stride(from: 0, to: entries.count, by: 2) {
            #expect(entries[pair].hasPrefix("enter") && entries[pair + 1] == entries[pair].replacingOccurrences(of: "enter", with: "leave"))
        }
    }
}
