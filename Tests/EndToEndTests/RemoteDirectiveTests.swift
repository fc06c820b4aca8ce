import Foundation
import RollbackCtlKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Remote directives through the real binaries: keys from `rollbackctl keygen`, directives
/// from `rollbackctl sign`, served by real HTTP servers on 127.0.0.1, fetched by
/// `rollbackctl sync` (which executes rollbackctl-remote) and by the launcher's background sync.
@Suite struct RemoteDirectiveTests {
    /// A private bundle whose manifest trusts a fresh key, and a directory to serve.
    struct Fleet {
        let t: TestBundle
        let keys: String
        let www: String

        /// The deadline is generous unless a test is about it: these run beside the kill and
        /// crash tests on two cores, where starting a fetch alone has taken seconds.
        init(deadlineMilliseconds: Int = 30_000) throws {
            t = try TestBundle()
            keys = t.directory + "/keys"
            www = t.directory + "/www"
            try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
            let made = try t.rollbackctl("keygen", "--out", keys)
            try #require(made.status == 0, "keygen: \(made)")
            try t.setManifestSetting("remote.keys", try Self.keyBody(keys + "/directive.pub"))
            try t.setManifestSetting("remote.deadline_ms", String(deadlineMilliseconds))
            // No random wait before a start's first check (FleetScheduleTests covers the splay):
            // with the default (the interval), each start would leave a detached sync sleeping
            // for up to an hour after the test and its bundle are gone.
            try t.setManifestSetting("remote.splay_s", "0")
        }

        /// The one-line base64 body of a PEM public key, as scripts/bundle writes it.
        static func keyBody(_ path: String) throws -> String {
            try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
                .filter { !$0.hasPrefix("-----") }.joined()
        }

        /// Signs a directive into `www/<name>` with `rollbackctl sign`.
        @discardableResult
        func publish(_ decision: String, serial: Int, appliesTo: String? = nil, name: String = "directive.json",
                     key: String? = nil, extra: [String] = []) throws -> String {
            let path = www + "/" + name
            let result = try t.run(t.bundle + "/bin/rollbackctl", [
                "sign", "--key", key ?? keys + "/directive.key", "--decision", decision,
                "--applies-to", appliesTo ?? t.currentVersion, "--serial", String(serial),
                "--reason", "\(decision == "previous" ? "rollback" : "rollforward") \(serial)", "--out", path,
            ] + extra)
            try #require(result.status == 0, "sign: \(result)")
            // Static hosts date files to the second: make each publication visibly newer, and
            // settled (a day old): validators of a file modified within 2 s of the answer are
            // not kept, so a just-written file would never be answered 304.
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-86_400 + Double(serial))], ofItemAtPath: path)
            return path
        }

        func sync(_ arguments: String...) throws -> (result: ProcessResult, seconds: Double) {
            let start = Date()
            let result = try t.run(t.bundle + "/bin/rollbackctl", ["sync"] + arguments)
            return (result, Date().timeIntervalSince(start))
        }

        func remote() throws -> StatusDocument.Remote {
            try #require(try t.status().remote)
        }

        func activeSlot() throws -> String? { try t.status().activeSlot }
    }

    @Test func signedRollbackThenRollforwardSwitchTheNextStartAndA304ChangesNothing() throws {
        let fleet = try Fleet()
        let t = fleet.t
        let server = try LocalHTTPServer.staticFiles(root: fleet.www)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        try fleet.publish("previous", serial: 1)

        let (back, _) = try fleet.sync()
        #expect(back.status == 0, "\(back)")
        #expect(back.stdout == "Applied directive serial 1: run the previous slot (reason: rollback 1).\nThe next start runs the previous slot (\(t.previousVersion)).\n")
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        var status = try t.status()
        #expect(status.source == "remote")
        #expect(status.reason == "rollback 1 (directive serial 1)")
        #expect(try fleet.remote().acceptedSerial == 1)
        #expect(try fleet.remote().outcome == "applied")

        // Unchanged on the server: a conditional request, a 304, nothing else moves.
        let before = try String(contentsOfFile: t.state + "/state", encoding: .utf8)
        let (same, _) = try fleet.sync()
        #expect(same.status == 0)
        #expect(same.stdout == "The directive has not changed since the last check (HTTP 304 Not Modified); the decision stays.\n")
        #expect(try String(contentsOfFile: t.state + "/state", encoding: .utf8) == before)
        #expect(try fleet.remote().outcome == "unchanged")
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))

        try fleet.publish("current", serial: 2)
        let (forward, _) = try fleet.sync()
        #expect(forward.stdout == "Applied directive serial 2: run the current slot (reason: rollforward 2).\nThe next start runs the current slot (\(t.currentVersion)).\n")
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
        status = try t.status()
        #expect(status.rollback == false)
        #expect(try t.history().map { "\($0.to) \($0.source)" } == ["previous remote", "current remote"])

        let text = try t.rollbackctl("status").stdout
        #expect(text.contains("Remote: checked "))
        #expect(text.contains(": Applied directive serial 2: run the current slot (reason: rollforward 2)."))
        #expect(text.contains("; accepted serial 2; \(server.url("/directive.json"))"))
    }

    enum Hostile: String, CaseIterable {
        case neverAnswers, oneBytePerSecond, status500, status404, fiftyMegabytes, invalidJSON, badSignature,
             untrustedKey, replayedSerial, expired, otherApp, otherVersion, redirectLoop, connectionRefused

        /// The outcome `status --json` must show, and the exit status of `sync`.
        var expected: (outcome: String, code: String, exit: Int32) {
            switch self {
            case .neverAnswers, .oneBytePerSecond: return ("unreachable", "timed_out", 1)
            case .status500, .status404: return ("unreachable", "http_status", 1)
            case .fiftyMegabytes: return ("refused", "body_too_large", 1)
            case .invalidJSON: return ("refused", "malformed_envelope", 1)
            case .badSignature: return ("refused", "bad_signature", 1)
            case .untrustedKey: return ("refused", "untrusted_key", 1)
            case .replayedSerial: return ("refused", "replayed_serial", 1)
            case .expired: return ("refused", "expired", 1)
            case .otherApp: return ("refused", "wrong_app", 1)
            case .otherVersion: return ("not_applicable", "version_mismatch", 0)
            case .redirectLoop: return ("unreachable", "too_many_redirects", 1)
            case .connectionRefused: return ("unreachable", "connection_failed", 1)
            }
        }

        /// Prepares the files and returns the path to fetch from the hostile server.
        func prepare(_ fleet: Fleet) throws -> String {
            switch self {
            case .neverAnswers: return "/hang"
            case .oneBytePerSecond: return "/drip"
            case .status500: return "/status/500"
            case .status404: return "/status/404"
            case .fiftyMegabytes: return "/big"
            case .redirectLoop: return "/loop/a"
            case .connectionRefused: return ""
            case .invalidJSON:
                try "{\"payload\": not json".write(toFile: fleet.www + "/bad.json", atomically: true, encoding: .utf8)
                return "/files/bad.json"
            case .badSignature:
                // Change one word of the signed payload and keep the signature.
                let path = try fleet.publish("previous", serial: 7, name: "bad.json")
                var envelope = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
                let payload = String(decoding: Data(base64Encoded: envelope["payload"] as! String)!, as: UTF8.self)
                envelope["payload"] = Data(payload.replacingOccurrences(of: "rollback 7", with: "rollback 8").utf8).base64EncodedString()
                try JSONSerialization.data(withJSONObject: envelope).write(to: URL(fileURLWithPath: path))
                return "/files/bad.json"
            case .untrustedKey:
                let stranger = fleet.t.directory + "/stranger"
                _ = try fleet.t.rollbackctl("keygen", "--out", stranger)
                try fleet.publish("previous", serial: 7, name: "bad.json", key: stranger + "/directive.key")
                return "/files/bad.json"
            case .expired:
                try fleet.publish("previous", serial: 7, name: "bad.json",
                                  extra: ["--issued-at", "2020-01-01T00:00:00Z", "--expires-at", "2020-01-08T00:00:00Z"])
                return "/files/bad.json"
            case .otherApp:
                try fleet.publish("previous", serial: 7, name: "bad.json", extra: ["--app-id", "com.example.other"])
                return "/files/bad.json"
            case .otherVersion:
                try fleet.publish("previous", serial: 7, appliesTo: "0.9.0", name: "bad.json")
                return "/files/bad.json"
            case .replayedSerial:
                try fleet.publish("previous", serial: 5, name: "bad.json")
                return "/files/bad.json"
            }
        }
    }

    /// Each hostile answer: the decision stays, sync ends within the deadline (2 s) plus 2 s,
    /// and `status` shows why, in the sentence sync printed.
    @Test(arguments: Hostile.allCases)
    func hostileAnswersLeaveTheDecisionAlone(_ hostile: Hostile) throws {
        let fleet = try Fleet(deadlineMilliseconds: 2000)
        let t = fleet.t
        let server = try LocalHTTPServer.hostile(root: fleet.www)
        defer { server.stop() }
        var expectedSlot = "current"
        if hostile == .replayedSerial {
            // Accept serial 10 first (a rollback), so serial 5 is a replay.
            try fleet.publish("previous", serial: 10)
            try t.setManifestSetting("remote.url", server.url("/files/directive.json"))
            #expect(try fleet.sync().result.status == 0)
            expectedSlot = "previous"
        }
        let path = try hostile.prepare(fleet)
        let url = hostile == .connectionRefused ? "http://127.0.0.1:\(try unusedLocalPort())/directive.json" : server.url(path)
        try t.setManifestSetting("remote.url", url)
        let stateBefore = try? String(contentsOfFile: t.state + "/state", encoding: .utf8)

        let (result, seconds) = try fleet.sync()
        let expected = hostile.expected
        #expect(result.status == expected.exit, "\(result)")
        #expect(seconds < 2 + 2, "sync took \(seconds) s")

        let remote = try fleet.remote()
        #expect(remote.outcome == expected.outcome)
        #expect(remote.code == expected.code)
        let reason = try #require(remote.reason)
        #expect(reason.hasSuffix(".") && !reason.contains("\n"))
        if expected.exit == 0 {
            #expect(result.stdout == reason + "\n")
        } else {
            #expect(result.stderr == "Error: \(reason)\n")
        }
        #expect(try fleet.activeSlot() == expectedSlot)
        #expect((try? String(contentsOfFile: t.state + "/state", encoding: .utf8)) == stateBefore)
        #expect(try t.rollbackctl("status").stdout.contains("Remote: checked "))
        if expected.outcome != "not_applicable" {
            #expect((remote.lastSuccessAt == nil) == (hostile != .replayedSerial))
        }
    }

    @Test func aSupervisedServerSwitchesAsSoonAsADirectiveIsPublished() throws {
        let fleet = try Fleet()
        let t = fleet.t
        let server = try LocalHTTPServer.staticFiles(root: fleet.www)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        try t.setManifestSetting("remote.interval_s", "1")
        let app = try SupervisedLauncher(t, ["serve"])
        defer { app.stop() }
        #expect(app.wait(upTo: 30) { app.heartbeat["slot"] == "current" && app.heartbeat["state"] == "running" })
        try fleet.publish("previous", serial: 1)
        // The supervisor syncs when the interval has passed and replaces the child at once.
        #expect(app.wait(upTo: 20) { app.heartbeat["slot"] == "previous" && app.heartbeat["state"] == "running" })
        // The sync applies first and records after (SyncCommand): the serial lands a moment later.
        #expect(waitUntil(seconds: 10) { (try? fleet.remote().acceptedSerial) == 1 })
        #expect(try t.status().source == "remote")
    }

    @Test func launcherStartsOneBackgroundSyncPerIntervalAndNeverWaitsForIt() throws {
        let fleet = try Fleet()
        let t = fleet.t
        let server = try LocalHTTPServer.staticFiles(root: fleet.www)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        try t.setManifestSetting("remote.interval_s", "3600")
        try fleet.publish("previous", serial: 1)

        // The first start triggers the sync and runs the current slot without waiting.
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
        #expect(waitUntil(seconds: 15) { (try? fleet.remote().acceptedSerial) == 1 })
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))

        // Within the interval no start syncs again, whatever is published. The marker holds
        // the next due time: at least 3/4 of the interval ahead once the sync recorded it.
        let marker = t.state + "/remote.attempt"
        #expect(waitUntil(seconds: 15) {
            let due = try? FileManager.default.attributesOfItem(atPath: marker)[.modificationDate] as? Date
            return (due ?? .distantPast) > Date().addingTimeInterval(2600)
        })
        let touched = try FileManager.default.attributesOfItem(atPath: marker)[.modificationDate] as? Date
        try fleet.publish("current", serial: 2)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        usleep(1_500_000)
        #expect(try fleet.remote().acceptedSerial == 1)
        #expect(try FileManager.default.attributesOfItem(atPath: marker)[.modificationDate] as? Date == touched)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))

        // Once the interval has passed, the next start syncs again.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3601)], ofItemAtPath: marker)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        #expect(waitUntil(seconds: 15) { (try? fleet.remote().acceptedSerial) == 2 })
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
    }

    @Test func checkBeforeStartAppliesADirectiveToThisVeryStart() throws {
        let fleet = try Fleet()
        let t = fleet.t
        let server = try LocalHTTPServer.staticFiles(root: fleet.www)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        try t.setManifestSetting("remote.check_before_start", "true")
        try fleet.publish("previous", serial: 1)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
    }

    @Test func checkBeforeStartGivesUpOnAnUnreachableServerWithinItsDeadline() throws {
        let fleet = try Fleet()
        let t = fleet.t
        let server = try LocalHTTPServer.hostile(root: fleet.www)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/hang"))
        try t.setManifestSetting("remote.check_before_start", "true")
        try t.setManifestSetting("remote.before_start_deadline_ms", "500")
        let start = Date()
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
        #expect(Date().timeIntervalSince(start) < 0.5 + 1.5)
        #expect(try fleet.remote().code == "timed_out")
    }

    @Test func keygenWritesAPrivateKeyOnlyItsOwnerCanReadAndNeverOverwrites() throws {
        let t = try TestBundle()
        let keys = t.directory + "/keys"
        let made = try t.rollbackctl("keygen", "--out", keys)
        #expect(made.status == 0)
        #expect(made.stdout.hasPrefix("Wrote \(keys)/directive.key (private key, mode 0600"))
        let mode = try FileManager.default.attributesOfItem(atPath: keys + "/directive.key")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try t.rollbackctl("keygen", "--out", keys)
        #expect(again.status == 1)
        #expect(again.stderr.hasPrefix("Error: Refusing to overwrite the existing key file \(keys)/directive."))
    }

    @Test func syncExplainsWhatIsMissingAndSpeaksLikeTheRest() throws {
        let t = try TestBundle()
        let noURL = try t.rollbackctl("sync")
        #expect(noURL.status == 1)
        #expect(noURL.stderr == "Error: No directive URL: pass --url URL, or build the bundle with scripts/bundle --directive-url URL.\n")
        let noKey = try t.rollbackctl("sync", "--url", "https://example.com/directive.json")
        #expect(noKey.status == 1)
        #expect(noKey.stderr.hasPrefix("Error: The manifest trusts no directive key"))
        let usage = try t.rollbackctl("sync", "--deadline-ms", "soon")
        #expect(usage.status == 64)
        #expect(usage.stderr.hasSuffix("See 'rollbackctl sync --help' for help.\n"))
        let help = try t.rollbackctl("sign", "--help")
        #expect(help.status == 0 && help.stdout.contains("USAGE: rollbackctl sign --key FILE"))
        let missing = try t.rollbackctl("sign", "--decision", "previous")
        #expect(missing.status == 64)
        #expect(missing.stderr.hasPrefix("Error: Missing '--key FILE'.\nUsage: rollbackctl sign "))
        // rollbackctl itself links neither networking nor libcrypto.
        let libraries = try shell("ldd", t.bundle + "/bin/rollbackctl").stdout + (try shell("ldd", t.bundle + "/bin/launcher").stdout)
        #expect(!libraries.contains("FoundationNetworking") && !libraries.contains("libcrypto"))
    }
}
