import AppVersions
import Foundation
import Testing

/// Whether a temporary directory under /dev/shm would be on another file system than
/// the system temporary directory, so a hard link between them fails with EXDEV.
private let sharedMemoryIsAnotherFileSystem: Bool = {
    var shm = stat(), temporary = stat()
    return stat("/dev/shm", &shm) == 0 && stat(NSTemporaryDirectory(), &temporary) == 0
        && access("/dev/shm", W_OK) == 0 && shm.st_dev != temporary.st_dev
}()

@Suite("Snapshot method: hard links for replaced files, copies for the rest")
struct SnapshotMethodTests {
    let clock = TestClock()
    let journal = Journal()

    func running(_ version: Version) -> RunningVersion { RunningVersion(version: version, build: "b1") }

    func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    /// The inode number and link count of `path` itself (a symbolic link is not followed).
    func node(_ path: String) throws -> (inode: UInt, links: UInt) {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw TestFailure("lstat \(path): errno \(errno)") }
        return (UInt(info.st_ino), UInt(info.st_nlink))
    }

    /// Fills `data` with `notes.json`, `attachments/photo.jpg` and `log.txt`; returns a
    /// migrator with one step "s" at 2.0.0 that runs `body`, snapshots going to `root/snaps`.
    func setUp(_ root: TemporaryDirectory, data: String, body: @escaping (MigrationContext) throws -> Void = { _ in }) throws -> Migrator {
        try FileManager.default.createDirectory(atPath: data + "/attachments", withIntermediateDirectories: true)
        try "n1".write(toFile: data + "/notes.json", atomically: false, encoding: .utf8)
        try "p1".write(toFile: data + "/attachments/photo.jpg", atomically: false, encoding: .utf8)
        try "l1".write(toFile: data + "/log.txt", atomically: false, encoding: .utf8)
        var migrator = Migrator(store: FileLedgerStore(directory: root.file("ledger")), now: clock.reader)
        migrator.baseline = { _ in "1.0.0" }
        migrator.dataDirectory = data
        migrator.snapshotDirectory = root.file("snaps")
        migrator.register("s", at: "2.0.0", body)
        return migrator
    }

    /// The snapshot a downgrade to 1.0.0 would restore.
    func snapshot(of migrator: Migrator) throws -> String {
        let plan = try migrator.downgradePlan(to: "1.0.0")
        guard case .restoreSnapshot(let path) = plan.steps.first?.action else {
            throw TestFailure("expected a snapshot restore, got \(plan.steps)")
        }
        return path
    }

    /// Links notes.json and everything under attachments/; records the paths it is asked about.
    func replacedFilesOnly() -> SnapshotMethod {
        .hardLink(where: { [journal] path in
            journal.append(path)
            return path == "notes.json" || path.hasPrefix("attachments/")
        })
    }

    @Test func aReplacedFileIsLinkedAndAnyOtherFileIsCopied() throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let data = root.file("data")
        var migrator = try setUp(root, data: data)
        migrator.snapshotMethod = replacedFilesOnly()
        try migrator.run(for: running("2.0.0"))
        let snapshot = try snapshot(of: migrator)

        // The step changed nothing, so the data files are as they were at snapshot time.
        for linked in ["notes.json", "attachments/photo.jpg"] {
            let original = try node(data + "/" + linked), copy = try node(snapshot + "/" + linked)
            #expect(copy.inode == original.inode, "\(linked) was not hard-linked")
            #expect(original.links == 2 && copy.links == 2, "\(linked): \(original.links) and \(copy.links) links")
        }
        let original = try node(data + "/log.txt"), copy = try node(snapshot + "/log.txt")
        #expect(copy.inode != original.inode, "log.txt was linked, not copied")
        #expect(original.links == 1 && copy.links == 1)
        #expect(read(snapshot + "/log.txt") == "l1")
        // Asked once per regular file, by its '/'-separated path relative to the data directory.
        #expect(journal.entries.sorted() == ["attachments/photo.jpg", "log.txt", "notes.json"])
    }

    @Test func aLinkedFileReplacedByAStepIsRestoredByADowngrade() throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let data = root.file("data")
        let notes = data + "/notes.json", log = data + "/log.txt"
        var migrator = try setUp(root, data: data) { [journal] _ in
            var info = stat()
            _ = lstat(notes, &info)
            journal.append("notes.json links before the step: \(info.st_nlink)")
            // notes.json is replaced: a new file, renamed over the old one.
            try "n2".write(toFile: notes + ".new", atomically: false, encoding: .utf8)
            guard rename(notes + ".new", notes) == 0 else { throw TestFailure("rename: errno \(errno)") }
            // log.txt is modified in place, which is why it must be copied.
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("l2".utf8))
            try handle.close()
        }
        migrator.snapshotMethod = replacedFilesOnly()
        try migrator.run(for: running("2.0.0"))
        #expect(journal.entries.contains("notes.json links before the step: 2"))
        #expect(read(notes) == "n2" && read(log) == "l1l2")
        #expect(read(try snapshot(of: migrator) + "/notes.json") == "n1")

        let report = try migrator.downgrade(to: "1.0.0")
        #expect(report.actions.map(\.method) == [.restore])
        #expect(read(notes) == "n1")
        #expect(read(log) == "l1")
        #expect(read(data + "/attachments/photo.jpg") == "p1")
        // A restore copies: the restored file is not shared with the snapshot.
        #expect(try node(notes).links == 1)
    }

    @Test func theDefaultCopiesEveryFile() throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let data = root.file("data")
        let migrator = try setUp(root, data: data)
        try migrator.run(for: running("2.0.0"))
        let snapshot = try snapshot(of: migrator)
        for file in ["notes.json", "attachments/photo.jpg", "log.txt"] {
            let original = try node(data + "/" + file), copy = try node(snapshot + "/" + file)
            #expect(copy.inode != original.inode, "\(file) was linked by default")
            #expect(original.links == 1 && copy.links == 1)
            #expect(read(snapshot + "/" + file) == read(data + "/" + file))
        }
    }

    @Test func hardLinkAllLinksEveryRegularFileAndCopiesSymbolicLinks() throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let data = root.file("data")
        var migrator = try setUp(root, data: data)
        try FileManager.default.createSymbolicLink(atPath: data + "/current", withDestinationPath: "notes.json")
        migrator.snapshotMethod = .hardLinkAll
        try migrator.run(for: running("2.0.0"))
        let snapshot = try snapshot(of: migrator)
        for file in ["notes.json", "attachments/photo.jpg", "log.txt"] {
            #expect(try node(snapshot + "/" + file).inode == node(data + "/" + file).inode, "\(file) was not linked")
        }
        #expect(try node(snapshot + "/current").inode != node(data + "/current").inode)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: snapshot + "/current") == "notes.json")
    }

    @Test(.enabled(if: sharedMemoryIsAnotherFileSystem, "needs /dev/shm on another file system than the temporary directory"))
    func aFileThatCannotBeLinkedAcrossFileSystemsIsCopied() throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        var template = Array("/dev/shm/appversions-test-XXXXXX".utf8CString)
        let data = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        defer { try? FileManager.default.removeItem(atPath: data) }
        var migrator = try setUp(root, data: data)
        migrator.snapshotMethod = .hardLinkAll
        try migrator.run(for: running("2.0.0"))
        let snapshot = try snapshot(of: migrator)
        for file in ["notes.json", "attachments/photo.jpg", "log.txt"] {
            #expect(try node(snapshot + "/" + file).links == 1)
            #expect(read(snapshot + "/" + file) == read(data + "/" + file))
        }
    }
}
