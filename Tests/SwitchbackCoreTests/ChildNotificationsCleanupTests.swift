#if canImport(Glibc)
import Glibc
#endif
@testable import SwitchbackCore
import Testing

/// Issue 36, part 7: the start-up clean-up of `switchback-notify-*` directories removes only
/// those whose owner is provably gone, never one another supervisor has just made.
@Suite struct ChildNotificationsCleanupTests {
    /// A fresh parent directory (mode 0700) and a `switchback-notify-` directory in it.
    func parent() throws -> String {
        var template = Array("/tmp/notify-cleanup-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { throw TestError("mkdtemp") }
        return String(cString: template)
    }

    func makeDirectory(_ parent: String, _ name: String) -> String {
        let path = parent + "/" + ChildNotifications.prefix + name
        #expect(mkdir(path, 0o700) == 0)
        return path
    }

    func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    func removeTree(_ path: String) {
        var status: Int32 = 0
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/rm"), strdup("-rf"), strdup(path), nil]
        defer { argv.forEach { free($0) } }
        if posix_spawn(&pid, "/bin/rm", nil, nil, argv, environ) == 0 { waitpid(pid, &status, 0) }
    }

    struct TestError: Error { let what: String; init(_ what: String) { self.what = what } }

    @Test func aDirectoryWhoseLockIsHeldStaysAndOneWhoseLockIsFreeGoes() throws {
        let parent = try parent()
        defer { removeTree(parent) }
        let live = makeDirectory(parent, "live00")
        let gone = makeDirectory(parent, "gone00")
        let held = open(live + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(held >= 0 && flock(held, LOCK_EX | LOCK_NB) == 0)
        defer { close(held) }
        let free = open(gone + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        close(free)  // its owner died: the kernel released its lock
        ChildNotifications.removeAbandonedDirectories(in: parent)
        #expect(exists(live + "/lock"), "a live owner's directory stays")
        #expect(!exists(gone), "a dead owner's directory goes")
    }

    @Test func aDirectoryBeingMadeStaysUntilItIsAnHourOld() throws {
        let parent = try parent()
        defer { removeTree(parent) }
        let fresh = makeDirectory(parent, "fresh0")
        let making = makeDirectory(parent, "making")
        let stale = makeDirectory(parent, "stale0")
        close(open(making + "/lock.new", O_RDWR | O_CREAT | O_CLOEXEC, 0o600))
        var old = [timespec(tv_sec: time(nil) - 7200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7200, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, stale, &old, 0) == 0)
        ChildNotifications.removeAbandonedDirectories(in: parent)
        #expect(exists(fresh), "just made by mkdtemp, its lock not yet taken: never removed")
        #expect(exists(making + "/lock.new"), "its lock taken under the temporary name: never removed")
        #expect(!exists(stale), "no lock and no socket for two hours: its owner died before taking its lock")
    }

    @Test func aSupervisorsOwnDirectoryHoldsItsLockUntilItIsRemoved() throws {
        let notifications = try ChildNotifications()
        #expect(ChildNotifications.isStillHeld(notifications.lock, in: notifications.directory))
        let parent = FileSystem.parentDirectory(of: notifications.directory)
        ChildNotifications.removeAbandonedDirectories(in: parent)
        #expect(exists(notifications.name), "a live supervisor's socket and directory stay")
        notifications.remove()
        #expect(!exists(notifications.directory))
    }
}
