import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A second local user plants symbolic links at every name a writer creates or replaces, in
/// the state directory and in the data directory, while root runs the launcher (plain and
/// supervised), rollbackctl and the sample app's migrations: no file outside those
/// directories changes, and each refusal says why (docs/security.md, "Files").
@Suite(.enabled(if: geteuid() == 0, "needs root to run as root against files of a second uid"))
struct PlantedLinkTests {
    /// Every name a writer creates or replaces in the state directory.
    static let stateNames = ["state", "health", "history.log", "lock", "verified-slots", "remote", "remote.attempt",
                             "install-id", "observe-counts", "data-state", "supervisor", "switch.pending", "sync.lock",
                             "data.lock"]

    /// Root's files elsewhere, which a followed link would make root write: their names,
    /// sizes, mtimes and SHA-256, before and after.
    struct Victim {
        let path: String

        init(in t: TestBundle) throws {
            path = t.directory + "/victim"
            try shell("mkdir", "-m", "755", path, path + "/nested")
            for name in ["precious", "nested/deep"] {
                try Data("root's \(name)\n".utf8).write(to: URL(fileURLWithPath: path + "/" + name))
            }
        }

        func snapshot() throws -> [String] {
            let listed = try shell("find", path, "-printf", "%P %y %s %T@\\n").stdout
            let sums = try shell("sh", "-c", "cd '\(path)' && find . -type f -exec sha256sum {} + | sort").stdout
            return listed.split(separator: "\n").map(String.init).sorted() + [sums]
        }
    }

    /// The entries of `directory`: name, type and link target, to show that nothing was
    /// created, removed or replaced there.
    static func entries(_ directory: String) throws -> [String] {
        try shell("find", directory, "-printf", "%P %y %u %l %s\\n").stdout.split(separator: "\n").map(String.init).sorted()
    }

    /// Plants, as the second user would, a link at each of `names` in `directory`: to the
    /// victim's file, or (for `directories`) to the victim's directory.
    static func plant(_ names: [String], directories: [String] = [], in directory: String, victim: Victim, owner: uid_t) throws {
        for name in names {
            try shell("ln", "-sfn", directories.contains(name) ? victim.path : victim.path + "/precious", directory + "/" + name)
            try shell("chown", "-h", String(owner), directory + "/" + name)
        }
    }

    @Test func aStateDirectoryAnotherUserOwnsGetsNoWriteAtAll() throws {
        let other = try SecondUser.uid()
        let t = try TestBundle()
        let victim = try Victim(in: t)
        #expect(try t.launcher().status == 0)
        // The second user owns the state directory: they could have replaced every entry.
        try shell("rm", "-rf", t.state)
        try shell("mkdir", "-m", "755", t.state)
        try shell("chown", String(other), t.state)
        try Self.plant(Self.stateNames + ["data", "data.versions"], directories: ["data", "data.versions"],
                       in: t.state, victim: victim, owner: other)
        let before = try victim.snapshot()
        let planted = try Self.entries(t.state)
        let owned = "The state directory \(t.state) is owned by another user (owner uid \(other), mode 755); refusing to trust it: run 'chown 0 \(t.state)' or remove it"

        let plain = try t.launcher()
        print("PLAIN", plain)
        let status = try t.rollbackctl("status")
        print("STATUS", status)
        for command in [["rollback"], ["rollforward"], ["mark-good", "current"]] {
            let result = try t.run(t.bundle + "/bin/rollbackctl", command)
            #expect(result.status == 1, "\(command): \(result)")
            #expect(result.stderr == "Error: \(owned).\n", "\(command): \(result)")
        }
        let supervised = try SupervisedLauncher(t, [])
        supervised.wait(upTo: 5) { supervised.process.hasExited }
        print("SUPERVISED", supervised.stderr)
        supervised.stop()

        #expect(try victim.snapshot() == before, "a planted link made root write outside the state directory")
        #expect(try Self.entries(t.state) == planted, "something was written in the untrusted state directory")
    }

    @Test func aDataDirectoryAnotherUserOwnsGetsNoMigration() throws {
        let other = try SecondUser.uid()
        let t = try TestBundle()
        let victim = try Victim(in: t)
        let previous = ["SWITCHBACK_SLOT": "previous"]
        #expect(try t.launcher("note", "add", "written by 1.1.0", environment: previous).status == 0)
        // The data directory and its ledger beside it are the second user's, with links at
        // the names the migration and AppVersions write.
        for directory in [t.state + "/data", t.state + "/data.versions"] {
            try shell("chown", String(other), directory)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            try Self.plant(names + names.map { $0 + ".tmp" } + ["notes.v2", "notes.v2.tmp", "heartbeat"],
                           in: directory, victim: victim, owner: other)
        }
        let before = try victim.snapshot()
        let planted = try Self.entries(t.state + "/data") + Self.entries(t.state + "/data.versions")

        let upgraded = try t.launcher()
        print("UPGRADE", upgraded)
        let supervised = try SupervisedLauncher(t, [])
        supervised.wait(upTo: 5) { supervised.process.hasExited }
        print("SUPERVISED", supervised.stderr)
        supervised.stop()

        #expect(try victim.snapshot() == before, "a planted link made root write outside the data directory")
        #expect(try Self.entries(t.state + "/data") + Self.entries(t.state + "/data.versions") == planted)
    }

    @Test func linksPlantedInATrustedStateDirectoryAreReplacedOrRefusedNeverFollowed() throws {
        let t = try TestBundle()
        let victim = try Victim(in: t)
        #expect(try t.launcher().status == 0)
        // Only root could plant these here; what matters is that none is written through.
        try Self.plant(["state", "health", "verified-slots", "remote.attempt", "observe-counts", "data-state"],
                       in: t.state, victim: victim, owner: 0)
        try shell("rm", "-rf", t.state + "/data")
        try Self.plant(["data"], directories: ["data"], in: t.state, victim: victim, owner: 0)
        let before = try victim.snapshot()
        let back = try t.rollbackctl("rollback")
        print("BACK", back)
        let started = try t.launcher()
        print("STARTED", started)
        let locked = try t.rollbackctl("rollforward")
        print("FORWARD", locked)
        #expect(try victim.snapshot() == before)
    }
}
