import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A failed write is never silent: a state directory on a small tmpfs, filled up or
/// remounted read-only, through the real binaries. Needs root (mount); skipped otherwise.
@Suite(.serialized) struct WriteFailureTests {
    /// A bundle whose state directory is a 1 MiB tmpfs, after one good start.
    static func mounted() throws -> (TestBundle, unmount: () -> Void)? {
        guard geteuid() == 0 else {
            print("WriteFailureTests skipped: mounting a tmpfs needs root (uid \(geteuid())).")
            return nil
        }
        let t = try TestBundle()
        try FileManager.default.createDirectory(atPath: t.state, withIntermediateDirectories: true)
        let mount = try shell("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", t.state)
        try #require(mount.status == 0, "mount failed: \(mount.stderr)")
        #expect(try t.launcher("note", "add", "kept").status == 0)
        // Put the build back on trial, with starts that do not mark it good: every start
        // must now record its try.
        try t.setManifestSetting("trial.good_on_exit_zero", "false")
        try FileManager.default.removeItem(atPath: t.state + "/health")
        return (t, { _ = try? shell("umount", "-l", t.state) })
    }

    static func fill(_ t: TestBundle) throws {
        _ = try shell("sh", "-c", "dd if=/dev/zero of='\(t.state)/filler' bs=4k 2>/dev/null; true")
    }

    @Test func aFullStateDirectoryIsSaidAtEveryStartAndARollbackChangesNothing() throws {
        guard let (t, unmount) = try Self.mounted() else { return }
        defer { unmount() }
        let historyBefore = try t.history().count
        try Self.fill(t)

        // A build on trial: its start cannot be counted, it runs, and says so.
        for _ in 0..<2 {
            let start = try t.launcher("exit", "3")
            #expect(start.status == 3)
            #expect(start.stderr.hasPrefix("launcher: This start of the current build (\(t.currentVersion), "))
            #expect(start.stderr.contains(") could not be recorded ("))
            #expect(start.stderr.contains("automatic rollback cannot count it until the state directory \(t.state) is writable again. Running it anyway.\n"))
        }
        let status = try t.status()
        #expect(status.writeProblem?.hasPrefix("The file system of the state directory \(t.state) is full") == true)
        #expect(try t.rollbackctl("status").stdout.contains("WARNING: The file system of the state directory"))

        let rollback = try t.rollbackctl("rollback")
        #expect(rollback.status == 1)
        #expect(rollback.stderr.hasPrefix("Error: Could not record the switch in \(t.state) ("))
        #expect(rollback.stderr.hasSuffix("nothing was changed: free space or make the directory writable, then retry.\n"))
        // Flag and data as they were: the current build still reads every note.
        #expect(try t.status().rollback == false)
        #expect(try t.history().count == historyBefore)
        #expect(try t.launcher("note", "list").stdout == "kept\n")

        // Space again: the same command works, and converts the data on the way.
        try FileManager.default.removeItem(atPath: t.state + "/filler")
        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(try t.launcher("note", "list").stdout == "kept\n")
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
    }

    @Test func aReadOnlyStateDirectoryIsSaidAtEveryStartAndARollbackChangesNothing() throws {
        guard let (t, unmount) = try Self.mounted() else { return }
        defer { unmount() }
        let remount = try shell("mount", "-o", "remount,ro", t.state)
        try #require(remount.status == 0, "remount failed: \(remount.stderr)")
        // The launcher runs the build and says the try was not counted; the sample app itself
        // then stops, because it cannot lock its data on a read-only file system.
        let start = try t.launcher("exit", "3")
        #expect(start.stderr.hasPrefix("launcher: This start of the current build (\(t.currentVersion), on trial with 3 tries left) could not be recorded ("))
        #expect(start.stderr.contains("Read-only file system"))
        #expect(start.stderr.contains("could not prepare its data in \(t.state)/data"))
        #expect(try t.status().writeProblem?.contains("is on a read-only file system") == true)
        let rollback = try t.rollbackctl("rollback")
        #expect(rollback.status == 1)
        #expect(rollback.stderr.hasPrefix("Error: Could not record the switch in \(t.state) ("))
        #expect(try t.status().rollback == false)
        #expect(try t.history().allSatisfy { $0.kind != "revert" })
    }
}

/// A switch interrupted between the data and the flag is finished by the next start.
@Suite struct InterruptedSwitchTests {
    @Test func aJournalledSwitchIsFinishedByTheNextStart() throws {
        let t = try TestBundle()
        #expect(try t.launcher("note", "add", "buy milk").status == 0)
        // What `rollbackctl rollback` leaves when killed after journalling, before the flag.
        let sha = try t.manifestValue("current.sha256")
        let journal = "format=1\nrollback=true\nsource=cli\nreason=bad export\nforce=false\nstarted_at=\(Int(Date().timeIntervalSince1970))\nfrom.sha256=\(sha)\nend=ok\n"
        try journal.write(toFile: t.state + "/switch.pending", atomically: true, encoding: .utf8)
        #expect(try t.rollbackctl("status").stdout.contains("A switch to the previous slot was interrupted between the data and the flag; the next rollbackctl command or start finishes it: the slot above is the one it runs then."))
        // Status names the slot the start will run once it has finished the switch, as the
        // launcher's planner does from the flag that switch writes (the flag still says current).
        let before = try t.status()
        #expect(before.rollback == false && before.pendingSwitch == true)
        #expect(before.activeSlot == "previous", "\(before)")

        let start = try t.launcher("note", "list")
        #expect(start.status == 0)
        #expect(start.stdout == "buy milk\n")
        #expect(start.stderr == "launcher: Finished the interrupted switch to the previous slot (cli: bad export): the next start runs the previous slot (\(t.previousVersion)).\n")
        #expect(!FileManager.default.fileExists(atPath: t.state + "/switch.pending"))
        let status = try t.status()
        #expect(status.rollback == true)
        #expect(status.pendingSwitch == false)
        #expect(try t.history().contains { $0.kind == "recovery" })
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
    }

    @Test func aDamagedJournalIsRemovedAndTheFlagStays() throws {
        let t = try TestBundle()
        #expect(try t.launcher().status == 0)
        try "garbage\n".write(toFile: t.state + "/switch.pending", atomically: true, encoding: .utf8)
        let rollforward = try t.rollbackctl("rollforward")
        #expect(rollforward.status == 0)
        #expect(rollforward.stderr.hasPrefix("Note: The switch journal \(t.state)/switch.pending "))
        #expect(rollforward.stderr.hasSuffix("It was removed; the flag stays as it is.\n"))
        #expect(!FileManager.default.fileExists(atPath: t.state + "/switch.pending"))
    }

    @Test func aJournalFromAnotherBundleIsDroppedAndSaysSo() throws {
        let t = try TestBundle()
        #expect(try t.launcher().status == 0)
        let other = String(repeating: "e", count: 64)
        let journal = "format=1\nrollback=true\nsource=remote\nforce=false\nstarted_at=1795000000\nfrom.sha256=\(other)\nend=ok\n"
        try journal.write(toFile: t.state + "/switch.pending", atomically: true, encoding: .utf8)
        let start = try t.launcher()
        #expect(start.stdout.hasPrefix(t.greeting(.current)))
        #expect(start.stderr == "launcher: Dropped the interrupted switch to the previous slot (remote): another bundle is installed since.\n")
        #expect(try t.history().last?.kind == "recovery")
        #expect(try t.status().rollback == false)
    }

    /// The previous slot is checked before any data is converted for a switch to it.
    @Test func aRollbackToABrokenPreviousSlotConvertsNothing() throws {
        let t = try TestBundle()
        #expect(try t.launcher("note", "add", "kept").status == 0)
        try shell("truncate", "-s", "4096", t.slotPath(.previous))
        let rollback = try t.rollbackctl("rollback")
        #expect(rollback.status == 1)
        #expect(rollback.stderr.hasPrefix("Error: The previous slot at \(t.slotPath(.previous)) is truncated: 4096 of "))
        #expect(rollback.stderr.hasSuffix("Nothing was converted and the flag is unchanged: a rollback needs a previous build that can run.\n"))
        #expect(try t.status().rollback == false)
        #expect(try t.history().allSatisfy { $0.kind != "revert" })
        #expect(try t.launcher("note", "list").stdout == "kept\n")
    }

    /// Rolled back, then the previous slot breaks: the start falls back to the current build
    /// without converting or archiving the data for a build that will not run.
    @Test func aBrokenPreviousSlotFallsBackWithoutTouchingTheData() throws {
        let t = try TestBundle()
        #expect(try t.launcher("note", "add", "one").status == 0)
        #expect(try t.rollbackctl("rollback").status == 0)
        // The current build runs once by hand and migrates the data forward again.
        #expect(try t.launcher("note", "add", "two", environment: ["SWITCHBACK_SLOT": "current"]).status == 0)
        let events = try t.history().count
        try shell("truncate", "-s", "4096", t.slotPath(.previous))
        for _ in 0..<2 {
            let start = try t.launcher("note", "list")
            #expect(start.stdout == "one\ntwo\n")
            #expect(start.stderr.contains("is truncated"))
            #expect(start.stderr.contains("Running the current slot (\(t.currentVersion)) instead."))
        }
        let kinds = try t.history().dropFirst(events).compactMap { $0.kind }
        #expect(kinds == ["fallback", "fallback"])
    }

    @Test func aReasonLongerThanTheLimitIsAUsageError() throws {
        let t = try TestBundle()
        let long = String(repeating: "x", count: 1001)
        let result = try t.rollbackctl("rollback", "--reason", long)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("Error: The reason is 1001 bytes long; give at most 1000"))
        #expect(try t.status().rollback == false)
    }
}
