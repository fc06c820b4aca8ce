import Foundation
import RollbackCtlKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Directives from a local file (`remote.url=file://...`, docs/remote.md "Directives from a
/// file") through the real binaries: a supervised launcher of the test bundle that watches a
/// volume laid out as the kubelet lays out a ConfigMap, and plain starts that read the file
/// only when it changed.
@Suite(.serialized) struct DirectiveFileTests {
    /// A directory laid out as the kubelet lays out a ConfigMap volume, and updated as it
    /// updates one: each version in a new timestamped directory, then a temporary link renamed
    /// over `..data` (one atomic step), `directive.json` → `..data/directive.json`.
    struct ConfigMapVolume {
        let root: String
        var path: String { root + "/directive.json" }
        var count = 0

        init(at root: String) throws {
            self.root = root
            try shell("mkdir", "-m", "755", root)
        }

        /// Publishes `bytes` as the next version; returns the new timestamped directory (its
        /// path, resolved) and the instant of the rename.
        @discardableResult
        mutating func publish(_ bytes: Data, fileMode: String = "644", directoryMode: String = "755",
                              owner: uid_t? = nil) throws -> (directory: String, renamedAt: Date) {
            count += 1
            let stamp = "..2026_11_26_04_00_\(String(format: "%02d", count)).123456789"
            let directory = root + "/" + stamp
            try shell("mkdir", "-m", directoryMode, directory)
            try shell("chmod", directoryMode, directory)
            try bytes.write(to: URL(fileURLWithPath: directory + "/directive.json"))
            try shell("chmod", fileMode, directory + "/directive.json")
            if let owner { try shell("chown", String(owner), directory + "/directive.json") }
            let old = (try? FileManager.default.destinationOfSymbolicLink(atPath: root + "/..data"))
            try FileManager.default.createSymbolicLink(atPath: root + "/..data_tmp", withDestinationPath: stamp)
            guard rename(root + "/..data_tmp", root + "/..data") == 0 else { throw TestFailure("rename ..data: \(errno)") }
            let renamedAt = Date()
            if !FileManager.default.fileExists(atPath: path) {
                try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "..data/directive.json")
            }
            if let old { try shell("rm", "-rf", root + "/" + old) }
            return (directory, renamedAt)
        }
    }

    /// A bundle whose manifest trusts a fresh key and reads its directive from `file`.
    struct Install {
        let t: TestBundle
        let keys: String
        var file: String

        init(file: (String) -> String) throws {
            t = try TestBundle()
            keys = t.directory + "/keys"
            self.file = file(t.directory)
            let made = try t.rollbackctl("keygen", "--out", keys)
            try #require(made.status == 0, "keygen: \(made)")
            try t.setManifestSetting("remote.keys", try RemoteDirectiveTests.Fleet.keyBody(keys + "/directive.pub"))
            try t.setManifestSetting("remote.url", "file://" + self.file)
        }

        /// A directive signed by `rollbackctl sign`, as bytes.
        func signed(_ decision: String, serial: Int) throws -> Data {
            let out = t.directory + "/signed-\(serial)-\(decision).json"
            let result = try t.run(t.bundle + "/bin/rollbackctl", [
                "sign", "--key", keys + "/directive.key", "--decision", decision, "--applies-to", t.currentVersion,
                "--serial", String(serial), "--reason", "\(decision) \(serial)", "--out", out,
            ])
            try #require(result.status == 0, "sign: \(result)")
            return try Data(contentsOf: URL(fileURLWithPath: out))
        }

        /// `first`'s payload under `second`'s signatures: a trusted key id whose signature fails.
        func tampered(_ first: Data, _ second: Data) throws -> Data {
            var envelope = try #require(try JSONSerialization.jsonObject(with: first) as? [String: Any])
            let other = try #require(try JSONSerialization.jsonObject(with: second) as? [String: Any])
            envelope["signatures"] = other["signatures"]
            return try JSONSerialization.data(withJSONObject: envelope)
        }

        func remote() throws -> StatusDocument.Remote { try #require(try t.status().remote) }
        var state: String { (try? String(contentsOfFile: t.state + "/state", encoding: .utf8)) ?? "" }
    }

    @Test func aSupervisedInstallAppliesAConfigMapUpdateWithinASecondAndRefusesWhatItCannotTrust() throws {
        var install = try Install { $0 + "/volume/directive.json" }
        let t = install.t
        var volume = try ConfigMapVolume(at: t.directory + "/volume")
        let app = try SupervisedLauncher(t, ["serve"])
        defer { app.stop() }
        #expect(app.wait(upTo: 30) { app.heartbeat["slot"] == "current" && app.heartbeat["state"] == "running" })
        // Nothing published yet: the start's sync said so.
        #expect(waitUntil(seconds: 10) { (try? install.remote().code) == "file_unreadable" })
        #expect(try install.remote().reason == "The directive file \(volume.path) does not exist; the decision stays until a directive is published there.")

        // The kubelet's update: a new timestamped directory, then the rename of ..data.
        let stateBefore = install.state
        let (_, renamedAt) = try volume.publish(try install.signed("previous", serial: 2))
        var appliedAt = Date.distantFuture
        #expect(waitUntil(seconds: 0.005, 20) {
            guard install.state != stateBefore else { return false }
            appliedAt = Date()
            return true
        })
        let latency = appliedAt.timeIntervalSince(renamedAt)
        print("DirectiveFileTests: the ConfigMap update was applied \(Int(latency * 1000)) ms after the rename of ..data")
        #expect(latency < 10, "applied \(latency) s after the rename")
        #expect(app.wait(upTo: 20) { app.heartbeat["slot"] == "previous" && app.heartbeat["state"] == "running" })
        // The sync applies first and records after (SyncCommand): the serial lands a moment later.
        #expect(waitUntil(seconds: 10) { (try? install.remote().acceptedSerial) == 2 })
        #expect(try t.status().source == "remote")
        #expect(try t.status().reason == "previous 2 (directive serial 2)")

        // What cannot be trusted is refused with its sentence, and nothing changes.
        let kept = install.state
        let other = try SecondUser.uid()
        var cases: [(String, (inout ConfigMapVolume) throws -> String)] = []
        cases.append(("bad_signature", { v in
            try v.publish(try install.tampered(try install.signed("current", serial: 3), try install.signed("current", serial: 4)))
            return "The directive's signature by trusted key "
        }))
        cases.append(("replayed_serial", { v in
            try v.publish(try install.signed("current", serial: 1))
            return "Directive serial 1 is older than the last accepted serial 2 (a replay or a stale copy); publish a directive with a serial above 2."
        }))
        cases.append(("untrusted_file", { v in
            let file = try v.publish(try install.signed("current", serial: 5), owner: other).directory + "/directive.json"
            return "The directive file \(file) is owned by another user (owner uid \(other), mode 644); refusing to trust it: run 'chown 0 \(file)' or remove it."
        }))
        cases.append(("untrusted_file", { v in
            let file = try v.publish(try install.signed("current", serial: 6), fileMode: "666").directory + "/directive.json"
            return "The directive file \(file) is writable by other users (owner uid 0, mode 666); refusing to trust it: run 'chmod go-w \(file)'."
        }))
        cases.append(("untrusted_file", { v in
            let directory = try v.publish(try install.signed("current", serial: 7), directoryMode: "777").directory
            return "The directory of the directive file \(directory) is writable by other users (owner uid 0, mode 777); refusing to trust it: run 'chmod go-w \(directory)'."
        }))
        for (code, publish) in cases {
            let expected = try publish(&volume)
            let seen = waitUntil(seconds: 10) {
                guard let remote = try? install.remote() else { return false }
                return remote.code == code && (remote.reason ?? "").hasPrefix(expected)
            }
            #expect(seen, "\(code): \(String(describing: try? install.remote()))")
            #expect(try install.remote().outcome == "refused")
            #expect(install.state == kept, "\(code) changed the choice")
        }
        // The same refusal from the command, with its exit code.
        let direct = try t.rollbackctl("sync")
        #expect(direct.status == 1)
        #expect(direct.stderr.hasPrefix("Error: The directory of the directive file \(volume.root)/..2026_11_26_04_00_"))
        #expect(app.heartbeat["slot"] == "previous")
        #expect(try install.remote().acceptedSerial == 2)

        // A good directive after all of that is applied as the first one was.
        try volume.publish(try install.signed("current", serial: 8))
        #expect(app.wait(upTo: 20) { app.heartbeat["slot"] == "current" && app.heartbeat["state"] == "running" })
        #expect(waitUntil(seconds: 10) { (try? install.remote().acceptedSerial) == 8 })
        _ = install
    }

    /// The kubelet writes the volume on the node and mounts it read-only in the container;
    /// its directory may be 0777 (an emptyDir's). On a read-only mount no one else can write,
    /// so it is trusted there, and refused where it is writable.
    @Test func aWorldWritableVolumeIsTrustedOnlyWhereItIsMountedReadOnly() throws {
        let install = try Install { $0 + "/volume/directive.json" }
        let t = install.t
        var node = try ConfigMapVolume(at: t.directory + "/kubelet")
        try shell("chmod", "777", node.root)
        try node.publish(try install.signed("previous", serial: 1))
        try shell("mkdir", "-m", "755", t.directory + "/volume")
        let bound = try shell("mount", "--bind", node.root, t.directory + "/volume")
        try #require(bound.status == 0, "mount: \(bound)")
        defer { _ = try? shell("umount", t.directory + "/volume") }

        // Writable, not yet read-only: refused, with the sentence.
        let refused = try t.rollbackctl("sync")
        #expect(refused.status == 1)
        #expect(refused.stderr == "Error: The directory of the directive file \(t.directory)/volume is writable by other users (owner uid 0, mode 777); refusing to trust it: run 'chmod go-w \(t.directory)/volume'.\n")
        #expect(try install.remote().code == "untrusted_file")

        let readOnly = try shell("mount", "-o", "remount,bind,ro", t.directory + "/volume")
        try #require(readOnly.status == 0, "remount: \(readOnly)")
        let applied = try t.rollbackctl("sync")
        #expect(applied.status == 0, "\(applied)")
        #expect(applied.stdout.hasPrefix("Applied directive serial 1: run the previous slot (reason: previous 1)."))
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
    }

    @Test func aPlainStartAppliesAChangedFileAndPaysOneStatForAnUnchangedOne() throws {
        let install = try Install { $0 + "/etc/directive.json" }
        let t = install.t
        try shell("mkdir", "-m", "755", t.directory + "/etc")
        // Nothing there: the start runs the current build and records why.
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
        #expect(try install.remote().code == "file_unreadable")

        // Configuration management writes the file (a rename into place): this very start applies it.
        func write(_ bytes: Data) throws {
            try bytes.write(to: URL(fileURLWithPath: install.file + ".tmp"))
            try shell("mv", install.file + ".tmp", install.file)
        }
        try write(try install.signed("previous", serial: 1))
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        #expect(try install.remote().acceptedSerial == 1)

        // Unchanged: one stat of the file (and one readlink of what the last sync judged), no sync.
        let trace = t.directory + "/strace.out"
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "SWITCHBACK_SLOT")
        env["SWITCHBACK_STATE_DIR"] = t.state
        let traced = try runProcess("/usr/bin/strace", ["-f", "-qq", "-o", trace, t.bundle + "/bin/launcher"], environment: env)
        #expect(traced.stdout.hasPrefix(t.greeting(.previous)), "\(traced)")
        let calls = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
        let onFile = calls.filter { $0.contains("\"\(install.file)\"") || $0.contains("\"\(t.directory)/etc") }
        print("DirectiveFileTests: an unchanged directive file cost \(onFile.count) system call(s): \(onFile.map { $0.split(separator: "(").first ?? "" })")
        #expect(onFile.count == 1, "\(onFile)")
        #expect(onFile.allSatisfy { $0.contains("stat") }, "\(onFile)")
        #expect(calls.filter { $0.contains("remote.file") }.count == 1)
        #expect(!calls.contains { $0.contains("rollbackctl-remote") }, "a sync ran")

        // Changed again: the next start reads it and runs what it says.
        try write(try install.signed("current", serial: 2))
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
        #expect(try install.remote().acceptedSerial == 2)
    }
}

/// Polls `condition` every `period` seconds until it holds or `seconds` pass.
func waitUntil(seconds period: Double, _ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(useconds_t(period * 1_000_000))
    }
    return try condition()
}
