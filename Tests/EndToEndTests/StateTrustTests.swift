import Foundation
import RollbackCtlKit
import SwitchbackCore
import Testing

/// The trust boundary of a group-writable state directory (issue 36, part 3): a group can
/// have members no file lists (Kubernetes gives `fsGroup` to every container of the pod as a
/// supplementary group), so group write is never trusted for a file, and each start of the
/// launcher takes group write off its own state directory and files. A second real uid that
/// holds the pod's group only as a supplementary group (`setpriv --groups`) plays the other
/// container of the pod.
@Suite(.enabled(if: geteuid() == 0, "needs root to create users and run processes as them"))
struct SupplementaryGroupTests {
    /// Runs `script` with /bin/sh as the second user, its own group as its group and
    /// `group` (the pod's fsGroup) as its only supplementary group.
    static func podmate(_ script: String, group: gid_t) throws -> ProcessResult {
        let other = try SecondUser.uid()
        let gid = getpwuid(other).map { $0.pointee.pw_gid } ?? other
        return try runProcess("/usr/bin/setpriv", ["--reuid=\(other)", "--regid=\(gid)", "--groups=\(group)",
                                                   "/bin/sh", "-c", script], environment: ["PATH": "/usr/bin:/bin"])
    }

    /// A state file that rolls the current build back, "forged by uid N", readable by all.
    static func forgedState(_ t: TestBundle) throws -> String {
        let other = try SecondUser.uid()
        let state = PersistedState(rollback: true, source: .cli, reason: "forged by uid \(other)", changedAt: Int64(Date().timeIntervalSince1970),
                                   fromBuild: BuildIdentity(sha256: try t.manifestValue("current.sha256"), version: t.currentVersion),
                                   toBuild: BuildIdentity(sha256: try t.manifestValue("previous.sha256"), version: t.previousVersion))
        let path = t.directory + "/forged"
        try Data(state.serialized()).write(to: URL(fileURLWithPath: path))
        try shell("chmod", "644", path)
        return path
    }

    static func mode(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
    }

    /// After the kubelet's pass, the first start makes the state directory and its files the
    /// user's alone: the pod-mate can then neither write the `lock` file and rename it to
    /// `state`, nor create `state`, `switch.request`, `health` or `analysis.override`; the app
    /// keeps running the current build, trusted.
    @Test func aPodMateCannotForgeTheStateOnceTheAppStarted() throws {
        let (t, volume, state) = try NonRootStateTests.podBundle()
        let user = try PodUser.ids()
        let environment = ["SWITCHBACK_STATE_DIR": state, "HOME": "/"]
        let first = try NonRootStateTests.run(t, "launcher", environment: environment)
        #expect(first.status == 0 && first.stdout.hasPrefix(t.greeting(.current)), "\(first)")
        try kubeletOwnershipPass(volume, group: user.gid)
        #expect(try Self.mode(state) == 0o2770)
        #expect(try Self.mode(state + "/lock") & 0o060 == 0o060)

        let second = try NonRootStateTests.run(t, "launcher", environment: environment)
        #expect(second.status == 0 && second.stdout.hasPrefix(t.greeting(.current)), "\(second)")
        #expect(second.stderr.isEmpty, "the state was not trusted after the pass: \(second)")
        #expect(try Self.mode(state) == 0o2750, "the start left the state directory group-writable")
        for name in try FileManager.default.contentsOfDirectory(atPath: state) {
            var info = stat()
            #expect(lstat(state + "/" + name, &info) == 0)
            if info.st_mode & 0o170000 == 0o100000 { #expect(info.st_mode & 0o022 == 0, "\(name) stayed group-writable") }
        }

        let forged = try Self.forgedState(t)
        let attempts = [
            "lock, then renamed": "cat '\(forged)' > '\(state)/lock' && mv -f '\(state)/lock' '\(state)/state'",
            "renamed": "mv -f '\(state)/lock' '\(state)/state'",
            "state": "cp '\(forged)' '\(state)/state'",
            "switch.request": "cp '\(forged)' '\(state)/switch.request'",
            "health": "cp '\(forged)' '\(state)/health'",
            "analysis.override": "printf 'analysis.window_s=1\\n' > '\(state)/analysis.override'",
        ]
        for (what, script) in attempts {
            let result = try Self.podmate(script, group: user.gid)
            #expect(result.status != 0, "\(what): the pod-mate could write: \(result)")
            #expect(result.stderr.contains("Permission denied"), "\(what): \(result)")
        }
        #expect(!FileManager.default.fileExists(atPath: state + "/state"))

        for _ in 0..<2 {
            let result = try NonRootStateTests.run(t, "launcher", environment: environment)
            #expect(result.status == 0 && result.stdout.hasPrefix(t.greeting(.current)), "\(result)")
            #expect(result.stderr.isEmpty, "\(result)")
        }
        let status = try NonRootStateTests.run(t, "rollbackctl", ["status", "--json"], environment: environment)
        let json = try JSONDecoder().decode(StatusDocument.self, from: Data(status.stdout.utf8))
        #expect(json.activeSlot == "current")
        #expect(json.stateTrust.trusted == true)
    }

    /// Between the kubelet's pass and the first start the directory is still the group's: a
    /// `state` the pod-mate puts there (its own file) decides nothing, and no start refuses
    /// (before, its rollback was honoured, and every start exited 70 since the previous build
    /// cannot read the current build's data).
    @Test func aStateAPodMateMadeDecidesNothing() throws {
        let (t, volume, state) = try NonRootStateTests.podBundle()
        let user = try PodUser.ids()
        let other = try SecondUser.uid()
        let environment = ["SWITCHBACK_STATE_DIR": state, "HOME": "/"]
        let first = try NonRootStateTests.run(t, "launcher", environment: environment)
        #expect(first.status == 0 && first.stdout.hasPrefix(t.greeting(.current)), "\(first)")
        try kubeletOwnershipPass(volume, group: user.gid)
        let forged = try Self.forgedState(t)
        let made = try Self.podmate("rm -f '\(state)/state' && cp '\(forged)' '\(state)/state'", group: user.gid)
        #expect(made.status == 0, "\(made)")

        let found = "The file \(state)/state is owned by another user (owner uid \(other), mode 644); refusing to trust it: run 'chown \(user.uid) \(state)/state' or remove it"
        for _ in 0..<3 {
            let result = try NonRootStateTests.run(t, "launcher", environment: environment)
            #expect(result.status == 0, "a forged state stopped the start: \(result)")
            #expect(result.stdout.hasPrefix(t.greeting(.current)), "the forged state switched the app: \(result)")
            #expect(result.stderr == "launcher: \(found); ignoring it and running the current slot.\n", "\(result)")
        }
        let status = try NonRootStateTests.run(t, "rollbackctl", ["status", "--json"], environment: environment)
        let json = try JSONDecoder().decode(StatusDocument.self, from: Data(status.stdout.utf8))
        #expect(json.activeSlot == "current")
        #expect(json.stateTrust.trusted == false)
        #expect(json.stateTrust.reason == found + ".")
        #expect(try Self.mode(state) == 0o2750, "the start left the state directory group-writable")
    }

    /// The reproduction, against a real supervisor running as the pod's user: the
    /// kubelet's pass happens while it runs (as at a remount), and the pod-mate then writes a
    /// forged state into the group-writable `lock` file and renames it to `state` (owner: the
    /// app's uid, mode 660), and later makes `state`, `switch.request`, `health` and
    /// `analysis.override` of its own. None is trusted (group-writable, or another account's):
    /// the supervisor keeps its child, and the next start runs the current build.
    @Test func aSupervisorKeepsItsChildWhateverAPodMateWrites() throws {
        let (t, volume, state) = try NonRootStateTests.podBundle()
        let user = try PodUser.ids()
        let environment = ["SWITCHBACK_STATE_DIR": state, "HOME": "/"]
        let first = try NonRootStateTests.run(t, "launcher", environment: environment)
        #expect(first.status == 0, "\(first)")
        let stderrPath = t.directory + "/supervisor.err"
        let supervisor = try SpawnedProcess("/usr/bin/setpriv", ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups",
                                                                "/usr/bin/env", "-i", "-C", "/", "PATH=/usr/bin:/bin", "HOME=/",
                                                                "SWITCHBACK_STATE_DIR=\(state)", "SWITCHBACK_SUPERVISE=1",
                                                                t.bundle + "/bin/launcher", "serve"],
                                            environment: ["PATH": "/usr/bin:/bin"], stderr: stderrPath)
        defer { if !supervisor.hasExited { kill(supervisor.pid, SIGKILL) }; supervisor.wait() }
        // The record is the pod user's file, which this root process's strict reader refuses:
        // read its two lines as text.
        func child() -> (pid: Int32, slot: String)? {
            guard let text = try? String(contentsOfFile: state + "/supervisor", encoding: .utf8) else { return nil }
            var fields: [String: String] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
            guard let pid = fields["child_pid"].flatMap({ Int32($0) }), let slot = fields["child_slot"] else { return nil }
            return (pid, slot)
        }
        func wait(upTo seconds: Double, for condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline { if condition() { return true }; usleep(50_000) }
            return condition()
        }
        #expect(wait(upTo: 60) { child()?.slot == "current" }, "the supervisor never ran its child: \((try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "")")
        let serving = try #require(child())

        try kubeletOwnershipPass(volume, group: user.gid)
        let forged = try Self.forgedState(t)
        let renamed = try Self.podmate("cat '\(forged)' > '\(state)/lock' && mv -f '\(state)/lock' '\(state)/state'", group: user.gid)
        #expect(renamed.status == 0, "\(renamed)")
        // The supervisor sees a changed state within two seconds (inotify at once): give it five.
        #expect(!wait(upTo: 5) { child()?.pid != serving.pid || child()?.slot != "current" }, "the forged state switched the supervisor's child: \((try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "")")

        let request = SwitchRequest(id: "forged-1", source: .cli, reason: "forged by a pod-mate", force: true,
                                    command: "rollbackctl rollback", fromBuild: try t.manifestValue("current.sha256"))
        try Data(request.serialized()).write(to: URL(fileURLWithPath: t.directory + "/request"))
        try shell("chmod", "644", t.directory + "/request")
        let made = try Self.podmate("""
            rm -f '\(state)/state' && cp '\(forged)' '\(state)/state' && cp '\(t.directory)/request' '\(state)/switch.request' \
              && rm -f '\(state)/health' && printf 'format=1\\nend=ok\\n' > '\(state)/health' \
              && printf 'analysis.window_s=1\\n' > '\(state)/analysis.override'
            """, group: user.gid)
        #expect(made.status == 0, "\(made)")
        #expect(!wait(upTo: 5) { child()?.pid != serving.pid || child()?.slot != "current" }, "a pod-mate's file switched the supervisor's child: \((try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "")")
        #expect(!supervisor.hasExited)
        kill(supervisor.pid, SIGTERM)
        #expect(wait(upTo: 30) { supervisor.hasExited })

        // The next start: the pod-mate's own state decides nothing; the app starts.
        let next = try NonRootStateTests.run(t, "launcher", environment: environment)
        #expect(next.status == 0, "\(next)")
        #expect(next.stdout.hasPrefix(t.greeting(.current)), "\(next)")
    }
}
