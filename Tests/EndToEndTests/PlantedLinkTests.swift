import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A second local user plants symbolic links at every name a writer creates or replaces, in
/// the state directory and in the data directory, while root runs the launcher (plain and
/// supervised), rollbackctl and the sample app's migrations: no file outside those
/// directories changes, and each refusal says why (docs/design.md, "Writes: one layer").
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

        // The launcher runs the current slot without writing there; the SDK then refuses to
        // make or migrate the data below that directory, and the app stops before its main.
        let refusedData = "Error: the app (version \(t.currentVersion)) could not prepare its data in \(t.state)/data: The directory above the data directory \(t.state) is owned by another user (owner uid \(other), mode 755); refusing to write there: run 'chown 0 \(t.state)' or choose another directory.\n"
        let plain = try t.launcher()
        #expect(plain.status == 1, "\(plain)")
        #expect(plain.stdout.isEmpty, "\(plain)")
        #expect(plain.stderr == "launcher: \(owned); ignoring it and running the current slot.\n" + refusedData, "\(plain)")
        let status = try t.rollbackctl("status")
        #expect(status.status == 0, "\(status)")
        #expect(status.stdout.contains("State: not trusted. \(owned).\n"), "\(status)")
        for command in [["rollback"], ["rollforward"], ["mark-good", "current"]] {
            let result = try t.run(t.bundle + "/bin/rollbackctl", command)
            #expect(result.status == 1, "\(command): \(result)")
            #expect(result.stderr == "Error: \(owned).\n", "\(command): \(result)")
        }
        let supervised = try SupervisedLauncher(t, [])
        #expect(supervised.wait(upTo: 20) { supervised.stderr.contains("restart 2)") }, "\(supervised.stderr)")
        supervised.stop()
        #expect(supervised.stderr.hasPrefix("launcher: \(owned); ignoring it and running the current slot.\n" + refusedData), "\(supervised.stderr)")

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
        try shell("mkdir", "-p", t.state + "/data.versions")
        for directory in [t.state + "/data", t.state + "/data.versions"] {
            try shell("chown", String(other), directory)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            try Self.plant(names + names.map { $0 + ".tmp" } + ["notes.v2", "notes.v2.tmp", "heartbeat"],
                           in: directory, victim: victim, owner: other)
        }
        let before = try victim.snapshot()
        let planted = try Self.entries(t.state + "/data") + Self.entries(t.state + "/data.versions")

        let data = t.state + "/data"
        let mode = String(try FileManager.default.attributesOfItem(atPath: data)[.posixPermissions] as! Int, radix: 8)
        let refused = "Error: the app (version \(t.currentVersion)) could not prepare its data in \(data): The data directory \(data) is owned by another user (owner uid \(other), mode \(mode)); refusing to write there: run 'chown 0 \(data)' or choose another directory.\n"
        let upgraded = try t.launcher()
        #expect(upgraded.status == 1, "\(upgraded)")
        #expect(upgraded.stdout.isEmpty && upgraded.stderr == refused, "\(upgraded)")
        let supervised = try SupervisedLauncher(t, [])
        #expect(supervised.wait(upTo: 20) { supervised.stderr.contains("restart 2)") }, "\(supervised.stderr)")
        supervised.stop()
        #expect(supervised.stderr.hasPrefix(refused), "\(supervised.stderr)")
        // rollbackctl's rollback asks the current build to convert the data back first: refused.
        let back = try t.rollbackctl("rollback")
        #expect(back.status == 1, "\(back)")
        #expect(back.stderr == "Error: Converting the data back for the previous build (\(t.previousVersion)) failed: The data directory \(data) is owned by another user (owner uid \(other), mode \(mode)); refusing to write there: run 'chown 0 \(data)' or choose another directory. Nothing was switched; fix the cause and run 'rollbackctl rollback' again (it resumes where it stopped).\n", "\(back)")

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
        // The temporary names carry the writer's pid: links at those of the next 400 pids.
        let last = Int(try String(contentsOfFile: "/proc/sys/kernel/ns_last_pid", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1
        try shell("sh", "-c", """
            cd '\(t.state)' && for p in $(seq \(last + 1) \(last + 400)); do
              for n in state health history.log verified-slots observe-counts data-state remote install-id switch.pending; do
                ln -s '\(victim.path)/precious' "$n.tmp-$p"
              done
            done
            """)
        let before = try victim.snapshot()
        let back = try t.rollbackctl("rollback")
        #expect(back.status == 1, "\(back)")
        #expect(back.stderr == "Error: Converting the data back for the previous build (\(t.previousVersion)) failed: The data directory \(t.state)/data is a symbolic link; refusing to write through it: use the real path instead. Nothing was switched; fix the cause and run 'rollbackctl rollback' again (it resumes where it stopped).\n", "\(back)")
        let started = try t.launcher()
        #expect(started.status == 1, "\(started)")
        #expect(started.stderr == "launcher: The file \(t.state)/state is a symbolic link; refusing to follow it: replace it with a regular file (or remove it); ignoring it and running the current slot.\nError: the app (version \(t.currentVersion)) could not prepare its data in \(t.state)/data: The data directory \(t.state)/data is a symbolic link; refusing to write through it: use the real path instead.\n", "\(started)")
        // rollforward replaces the linked state file (moved aside with renameat, the link
        // itself), never writing through it.
        let forward = try t.rollbackctl("rollforward")
        #expect(forward.status == 0, "\(forward)")
        #expect(forward.stderr.hasPrefix("Warning: The state file was damaged (The file \(t.state)/state is a symbolic link; refusing to follow it: replace it with a regular file (or remove it).); it was moved to \(t.state)/state.damaged-"), "\(forward)")
        var info = stat()
        #expect(lstat(t.state + "/state", &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
        // The writers met links at their own temporary names (and removed them, unfollowed).
        let left = try FileManager.default.contentsOfDirectory(atPath: t.state).filter { $0.contains(".tmp-") }.count
        #expect(left < 9 * 400, "no writer's pid fell in the planted range")
        #expect(try victim.snapshot() == before)
    }
}
