import Foundation
import Testing
import SwitchbackFiles
@testable import SwitchbackCore

/// The file layer every writer uses (SwitchbackFiles' `CheckedDirectory`), on a real file
/// system: links planted at the names it writes are replaced or refused, never written
/// through, and a directory swapped after its check changes nothing.
@Suite struct CheckedDirectoryTests {
    let root: String
    /// A directory of files that must never change, and its one file.
    let victims: String
    let victim: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/switchback-layer-XXXXXX").utf8CString)
        guard let pointer = mkdtemp(&template) else { throw SwitchbackError(.ioFailure, "mkdtemp failed") }
        root = URL(fileURLWithPath: String(cString: pointer)).resolvingSymlinksInPath().path
        victims = root + "/victims"
        victim = victims + "/precious"
        mkdir(victims, 0o700)
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
    }

    func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    func isLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & 0o170000 == 0o120000
    }

    @Test func aLinkAtTheTemporaryNameIsRemovedNotWrittenThrough() throws {
        let state = root + "/state"
        mkdir(state, 0o700)
        symlink(victim, state + "/state.tmp-\(getpid())")
        symlink(victim, state + "/ledger.tmp")
        let directory = try CheckedDirectory.open(state, what: "state directory")
        try directory.replace("state", with: Array("new\n".utf8))
        try directory.replace("ledger", with: Array("ledger\n".utf8), temporaryName: "ledger.tmp")
        #expect(contents(victim) == "precious\n")
        #expect(contents(state + "/state") == "new\n" && !isLink(state + "/state"))
        #expect(contents(state + "/ledger") == "ledger\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state).sorted() == ["ledger", "state"])
    }

    @Test func aLinkAtTheFinalNameIsReplacedNotFollowed() throws {
        let state = root + "/state"
        mkdir(state, 0o700)
        symlink(victim, state + "/state")
        try FileSystem.replace(state + "/state", with: Array("new\n".utf8))
        #expect(contents(victim) == "precious\n")
        #expect(!isLink(state + "/state") && contents(state + "/state") == "new\n")
    }

    @Test func aDirectorySwappedForALinkAfterItsCheckChangesNothing() throws {
        let state = root + "/state"
        mkdir(state, 0o700)
        let directory = try CheckedDirectory.open(state, what: "state directory")
        // Swapped after the check: the writes still land in the directory that was checked.
        #expect(rename(state, root + "/moved") == 0)
        #expect(symlink(victims, state) == 0)
        try directory.replace("state", with: Array("new\n".utf8))
        let lock = try directory.openFile("lock", flags: O_RDWR | O_CREAT)
        if let lock { close(lock) }
        try directory.remove("precious")
        #expect(try FileManager.default.contentsOfDirectory(atPath: victims) == ["precious"])
        #expect(contents(victim) == "precious\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/moved").sorted() == ["lock", "state"])
    }

    @Test func mkdiratOfAnExistingLinkIsRefused() throws {
        let state = root + "/state"
        mkdir(state, 0o700)
        symlink(victims, state + "/data")
        let directory = try CheckedDirectory.open(state, what: "state directory")
        do {
            _ = try directory.subdirectory("data", what: "data directory", creating: 0o700)
            Issue.record("a link was used as a directory")
        } catch {
            #expect(error.code == .untrusted)
            #expect(error.message == "The data directory \(state)/data is a symbolic link; refusing to write there: remove it, and Switchback makes the directory again.")
        }
        do {
            _ = try CheckedDirectory.open(state + "/data", what: "data directory", creating: 0o700)
            Issue.record("a link was used as a directory")
        } catch {
            #expect(error.message == "The data directory \(state)/data is a symbolic link; refusing to write through it: use the real path instead.")
        }
        // A link on the way is followed only when this user or root owns it (only they can
        // put one in a trusted directory); one of another user's is refused.
        if geteuid() == 0 {
            #expect(lchown(state + "/data", 65534, 65534) == 0)
            do {
                try FileSystem.createDirectory(state + "/data/below", what: "state directory")
                Issue.record("followed another user's link")
            } catch {
                #expect(error.message == "The symbolic link \(state)/data on the way to the state directory is owned by another user (owner uid 65534); refusing to follow it: remove it or run 'chown -h 0 \(state)/data'.")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: victims) == ["precious"])
    }

    @Test func aLinkAtALockOrAppendedFileIsRefusedWithASentence() throws {
        let state = root + "/state"
        mkdir(state, 0o700)
        symlink(victim, state + "/lock")
        symlink(victim, state + "/history.log")
        do {
            _ = try FileLock(path: state + "/lock")
            Issue.record("locked through a link")
        } catch {
            #expect(error.code == .insecurePermissions)
            #expect(error.message == "The lock file \(state)/lock is a symbolic link; refusing to follow it: replace it with a regular file (or remove it).")
        }
        do {
            try FileSystem.appendDurably(state + "/history.log", Array("line\n".utf8))
            Issue.record("appended through a link")
        } catch {
            #expect(error.message == "The file \(state)/history.log is a symbolic link; refusing to follow it: replace it with a regular file (or remove it).")
        }
        #expect(contents(victim) == "precious\n")
    }

    @Test func anUntrustedDirectoryGetsNoWriteNotEvenAMkdir() throws {
        let shared = root + "/shared"
        mkdir(shared, 0o700)
        chmod(shared, 0o777)
        do {
            _ = try FileSystem.directory(shared + "/state/data", what: "state directory", creating: true)
            Issue.record("made a directory below a world-writable one")
        } catch {
            #expect(error.code == .insecurePermissions)
            #expect(error.message == "The directory above the state directory \(shared) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(shared)'.")
        }
        do {
            try FileSystem.replace(shared + "/file", with: [0x31], what: "metrics directory")
            Issue.record("wrote in a world-writable directory")
        } catch {
            #expect(error.message == "The metrics directory \(shared) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(shared)'.")
        }
        // The layer's own rule says the same in its words.
        #expect(throws: FileError.self) { try CheckedDirectory.open(shared, what: "data directory", creating: 0o700) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: shared).isEmpty)
    }

    @Test func exactModeIgnoresTheUmask() throws {
        let metrics = root + "/metrics"
        mkdir(metrics, 0o755)
        let old = umask(0o077)
        defer { umask(old) }
        try FileSystem.replace(metrics + "/a.prom", with: [0x31], mode: 0o644, exactMode: true, durable: false)
        try FileSystem.replace(metrics + "/b", with: [0x31], mode: 0o644, durable: false)
        var info = stat()
        #expect(stat(metrics + "/a.prom", &info) == 0 && info.st_mode & 0o777 == 0o644)
        #expect(stat(metrics + "/b", &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test func linksOnTheWayAreFollowedOnlyWhenTrusted() throws {
        let real = root + "/real"
        mkdir(real, 0o700)
        mkdir(real + "/state", 0o700)
        symlink(real, root + "/alias")
        let directory = try CheckedDirectory.open(root + "/alias/state", what: "state directory")
        try directory.replace("state", with: [0x31])
        #expect(contents(real + "/state/state") == "1")
    }
}
