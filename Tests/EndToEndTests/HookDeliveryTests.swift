import Foundation
import RollbackCtlKit
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Hooks through the real binaries (docs/hooks.md): `rollbackctl` records a switch, the
/// detached `rollbackctl-remote deliver-hooks` runs a real command and POSTs to a real HTTP
/// receiver (python3's http.server), signed; a hook that hangs, fails or points at a closed
/// port delays no switch and shows in `status`.
@Suite struct HookDeliveryTests {
    /// A bundle whose hooks are `settings` (with `$DIR` for its directory), a command that
    /// appends its stdin and its event id to `DIR/hook.out`, and the key `s3cret` in `DIR/hook.key`.
    static func install(_ settings: [String: String]) throws -> TestBundle {
        let t = try TestBundle()
        let script = t.directory + "/hook.sh"
        try "#!/bin/sh\nread -r line\nprintf '%s %s\\n' \"$SWITCHBACK_EVENT_ID\" \"$line\" >> '\(t.directory)/hook.out'\n"
            .write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        try "s3cret\n".write(toFile: t.directory + "/hook.key", atomically: true, encoding: .utf8)
        chmod(t.directory + "/hook.key", 0o600)
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
            try t.setManifestSetting(key, value.replacingOccurrences(of: "$DIR", with: t.directory))
        }
        return t
    }

    /// What the command hook wrote: (event id, JSON) per line.
    static func commandLines(_ t: TestBundle) -> [(id: String, json: String)] {
        let text = (try? String(contentsOfFile: t.directory + "/hook.out", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
    }

    /// `printf '%s' MESSAGE | openssl dgst -sha256 -hmac KEY`: the signature a receiver computes.
    static func openSSLSignature(key: String, message: String) throws -> String {
        let file = NSTemporaryDirectory() + "hook-message-\(UUID().uuidString)"
        try message.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try shell("openssl", "dgst", "-sha256", "-hmac", key, file)
        return String(result.stdout.split(separator: " ").last ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aRollbackAndARollforwardReachTheCommandAndTheWebhookInOrderSigned() throws {
        let directory = try makeTemporaryDirectory()
        let receiver = try RequestLogServer(status: 200, directory: directory)
        defer { receiver.stop() }
        let t = try Self.install(["hooks.command": "$DIR/hook.sh", "hooks.url": receiver.url("/switchback"),
                                  "hooks.secret_file": "$DIR/hook.key"])
        let back = try t.rollbackctl("rollback", "--reason", "notes corrupted")
        #expect(back.status == 0, "\(back)")
        let backDone = Date().timeIntervalSince1970
        #expect(waitUntil(seconds: 30) { receiver.posts().count == 1 && Self.commandLines(t).count == 1 })
        let forward = try t.rollbackctl("rollforward", "--reason", "fixed")
        #expect(forward.status == 0, "\(forward)")
        let forwardDone = Date().timeIntervalSince1970
        #expect(waitUntil(seconds: 30) { receiver.posts().count == 2 && Self.commandLines(t).count == 2 }, "\((try? t.rollbackctl("status").stdout) ?? "")")

        let posts = receiver.posts()
        let lines = Self.commandLines(t)
        print("hooks: the webhook got the rollback \(Int((posts[0].time - backDone) * 1000)) ms and the rollforward \(Int((posts[1].time - forwardDone) * 1000)) ms after each command returned")
        let history = try t.history().filter { $0.kind == "switch" }
        for (index, post) in posts.enumerated() {
            let body = try #require(try JSONSerialization.jsonObject(with: Data(post.body.utf8)) as? [String: Any])
            #expect(body["kind"] as? String == "switch" && body["to"] as? String == (index == 0 ? "previous" : "current"), "in order: \(body)")
            #expect(body["reason"] as? String == history[index].reason && body["source"] as? String == "cli")
            #expect(body["version"] as? String == (index == 0 ? t.previousVersion : t.currentVersion))
            #expect(body["install"] as? String == (try String(contentsOfFile: t.state + "/install-id", encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines))
            let id = try #require(body["id"] as? String)
            #expect(post.headers["x-switchback-event-id"] == id && post.headers["x-switchback-event"] == "switch")
            #expect(post.headers["content-type"] == "application/json")
            // The signature a receiver computes with openssl, over "TIMESTAMP.BODY".
            let timestamp = try #require(post.headers["x-switchback-timestamp"])
            #expect(post.headers["x-switchback-signature"] == "sha256=" + (try Self.openSSLSignature(key: "s3cret", message: timestamp + "." + post.body)), "\(post.headers)")
            // The command got the same bytes, and the id in its environment.
            #expect(lines[index].id == id && lines[index].json + "\n" == post.body, "the same line, ending in a newline")
        }
        let status = try t.status().hooks
        #expect(status?.delivered == 2 && status?.failed == 0 && status?.queued == 0 && status?.lastFailure == nil, "\(String(describing: status))")
        let text = try t.rollbackctl("status").stdout
        #expect(text.contains("Hooks: command \(t.directory)/hook.sh and webhook \(receiver.url("/switchback")): 2 delivered, 0 failed, 0 queued.\n"), "\(text)")
    }

    /// The three ways a hook goes wrong: each delays no switch (`rollbackctl rollback` returns
    /// while the hook still hangs), and its failure shows in `status` with its sentence.
    @Test(arguments: ["hangs", "fails", "closed port"])
    func aHookThatGoesWrongDelaysNoSwitchAndShowsInStatus(how: String) throws {
        let t: TestBundle
        let expected: String
        switch how {
        case "hangs":
            t = try Self.install(["hooks.command": "$DIR/hang.sh", "hooks.timeout_ms": "3000", "hooks.retries": "0"])
            try "#!/bin/sh\nsleep 987\n".write(toFile: t.directory + "/hang.sh", atomically: true, encoding: .utf8)
            chmod(t.directory + "/hang.sh", 0o755)
            expected = "the hook command \(t.directory)/hang.sh did not finish within 3000 ms (hooks.timeout_ms) and was killed"
        case "fails":
            t = try Self.install(["hooks.command": "$DIR/fail.sh", "hooks.retries": "1"])
            try "#!/bin/sh\nexit 3\n".write(toFile: t.directory + "/fail.sh", atomically: true, encoding: .utf8)
            chmod(t.directory + "/fail.sh", 0o755)
            expected = "the hook command \(t.directory)/fail.sh exited with code 3"
        default:
            let port = try unusedLocalPort()
            t = try Self.install(["hooks.url": "http://127.0.0.1:\(port)/hook", "hooks.secret_file": "$DIR/hook.key", "hooks.retries": "0"])
            expected = "the webhook http://127.0.0.1:\(port)/hook could not be reached (connection refused)"
        }
        try FileManager.default.createDirectory(atPath: t.directory + "/metrics", withIntermediateDirectories: true)
        try t.setManifestSetting("metrics.textfile_dir", t.directory + "/metrics")
        let back = try t.rollbackctl("rollback", "--reason", "hook test")
        #expect(back.status == 0, "\(back)")
        let right = try t.status()
        #expect(right.activeSlot == "previous", "the switch is done")
        // The command returned while the hook still hung: it never waited for it.
        if how == "hangs" { #expect(right.hooks?.failed == 0 && right.hooks?.delivered == 0, "\(String(describing: right.hooks))") }
        #expect(waitUntil(seconds: 90) { (try? t.status().hooks?.failed) == 1 }, "\((try? t.rollbackctl("status").stdout) ?? "")")
        let hooks = try #require(try t.status().hooks)
        let tries = how == "fails" ? "2 tries" : "1 try"
        #expect(hooks.lastFailure?.hasPrefix("the switch event ") == true && hooks.lastFailure?.hasSuffix(" was not delivered after \(tries): \(expected)") == true,
                "\(hooks.lastFailure ?? "none")")
        #expect(hooks.delivered == 0 && hooks.queued == 0)
        // The deliverer rewrote the metrics after the failure: Prometheus can alert on it.
        #expect(waitUntil(seconds: 10) { ((try? SupervisorProbationTests.metrics(t)) ?? "").contains(",outcome=\"failed\"} 1\n") },
                "\((try? SupervisorProbationTests.metrics(t)) ?? "no metrics")")
        #expect(try SupervisorProbationTests.metrics(t).contains("switchback_hook_queue_length{"))
        let text = try t.rollbackctl("status").stdout
        #expect(text.contains("Hooks: last failure ("), "\(text)")
        #expect(text.contains(expected + ".\n"), "\(text)")
        if how == "hangs" {
            // Its process group was killed: the shell and its sleep.
            #expect(waitUntil(seconds: 5) { (try? shell("pgrep", "-f", "sleep 987"))?.stdout.isEmpty ?? true })
        }
    }

    @Test func aSecretEveryoneCanReadIsRefusedAndSaid() throws {
        let directory = try makeTemporaryDirectory()
        let receiver = try RequestLogServer(status: 200, directory: directory)
        defer { receiver.stop() }
        let t = try Self.install(["hooks.url": receiver.url("/h"), "hooks.secret_file": "$DIR/hook.key", "hooks.retries": "0"])
        chmod(t.directory + "/hook.key", 0o644)
        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(waitUntil(seconds: 30) { (try? t.status().hooks?.failed) == 1 })
        let failure = try t.status().hooks?.lastFailure ?? ""
        #expect(failure.hasSuffix("The hook secret file \(t.directory)/hook.key is readable by every user (mode 644); refusing to sign with it: run 'chmod o-r \(t.directory)/hook.key' and change the key"), "\(failure)")
        #expect(receiver.posts().isEmpty, "nothing unsigned went out")
    }

    @Test func verifyNamesHookSettingsThatDoNotRead() throws {
        let t = try Self.install(["hooks.url": "https://hooks.example.com/s"])
        let verify = try t.rollbackctl("verify")
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("hooks: FAILED: hooks.url is set without hooks.secret_file; name the file holding the key the events are signed with (HMAC-SHA256), so that the receiver can tell them from forgeries.\n"), "\(verify)")
        #expect(verify.stderr == "Error: the hook settings failed verification; rebuild the bundle with scripts/bundle.\n")
        let status = try t.rollbackctl("status").stdout
        #expect(status.contains("Hooks: not delivered: hooks.url is set without hooks.secret_file;"), "\(status)")
    }
}
