import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Remote directives served by a real nginx on 127.0.0.1 (issue 14, items 2 and 3): every
/// change is seen within two syncs whatever nginx's validators say, a replayed older serial is
/// refused by an install that never applied the newer one, and a server that answers 304 for
/// ever cannot keep an install from going stale.
@Suite struct NginxDirectiveTests {
    typealias Fleet = RemoteDirectiveTests.Fleet

    /// Signs a directive into `www/directive.json` with `rollbackctl sign`, with exactly `reason`.
    @discardableResult
    static func sign(_ fleet: Fleet, decision: String, serial: Int, reason: String, name: String = "directive.json",
                     extra: [String] = []) throws -> String {
        let path = fleet.www + "/" + name
        let result = try fleet.t.run(fleet.t.bundle + "/bin/rollbackctl", [
            "sign", "--key", fleet.keys + "/directive.key", "--decision", decision, "--applies-to", fleet.t.currentVersion,
            "--serial", String(serial), "--reason", reason, "--out", path,
        ] + extra)
        try #require(result.status == 0, "sign: \(result)")
        return path
    }

    /// Two directives signed into one file within the same second get different serials (the
    /// default serial is the time, and always above the replaced file's), so an install that
    /// applied the first applies the second.
    @Test func aDirectiveSignedOverAnotherInTheSameSecondGetsAHigherSerial() throws {
        let fleet = try Fleet()
        let path = fleet.www + "/directive.json"
        func sign(_ decision: String) throws -> UInt64 {
            let result = try fleet.t.run(fleet.t.bundle + "/bin/rollbackctl", [
                "sign", "--key", fleet.keys + "/directive.key", "--decision", decision, "--applies-to", fleet.t.currentVersion,
                "--reason", "quick \(decision)", "--out", path,
            ])
            try #require(result.status == 0, "sign: \(result)")
            let words = result.stdout.split(separator: " ")
            return try #require(words.count > 3 ? UInt64(words[3]) : nil, "\(result.stdout)")
        }
        let first = try sign("previous")
        let second = try sign("current")
        #expect(second > first, "serials \(first) then \(second)")
    }

    /// (mtime in whole seconds, size) of a file.
    static func secondAndSize(_ path: String) throws -> (Int, Int) {
        var info = stat()
        try #require(stat(path, &info) == 0)
        return (Int(info.st_mtim.tv_sec), Int(info.st_size))
    }

    /// Sets a file's mtime to `seconds` (whole seconds since the epoch).
    static func setModified(_ path: String, to seconds: Int) throws {
        var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
        try #require(utimensat(AT_FDCWD, path, &times, 0) == 0)
    }

    /// Publishes a rollback (serial 100), then replaces it by a rollforward (serial 101) of the
    /// same size with the same mtime second: nginx's ETag and Last-Modified do not change.
    /// Returns the directive's path.
    static func publishTwinsAfterFirstSync(_ fleet: Fleet, modified: Int, firstSyncs: Int) throws -> [String] {
        let path = try sign(fleet, decision: "previous", serial: 100, reason: "bad build, rolling back")
        try setModified(path, to: modified)
        var outcomes: [String] = []
        for _ in 0..<firstSyncs {
            let (result, _) = try fleet.sync()
            try #require(result.status == 0, "\(result)")
            outcomes.append(try fleet.remote().outcome ?? "?")
        }
        try #require(try fleet.activeSlot() == "previous")
        let before = try secondAndSize(path)
        // run_current is one character shorter than run_previous: one more in the reason.
        try sign(fleet, decision: "current", serial: 101, reason: "fixed build, rolling on.")
        try setModified(path, to: modified)
        let after = try secondAndSize(path)
        try #require(before == after, "the twin must keep the mtime second and size: \(before) vs \(after)")
        return outcomes
    }

    /// Syncs until the rollforward (serial 101) is applied; returns how many syncs it took (at most `limit`).
    static func syncsUntilRollforward(_ fleet: Fleet, limit: Int) throws -> (count: Int, outcomes: [String]) {
        var outcomes: [String] = []
        for count in 1...limit {
            let (result, _) = try fleet.sync()
            #expect(result.status == 0, "\(result)")
            let remote = try fleet.remote()
            outcomes.append(remote.outcome ?? "?")
            if remote.acceptedSerial == 101 { return (count, outcomes) }
        }
        return (limit + 1, outcomes)
    }

    @Test func aSameSizeDirectiveReplacedWithinTheSameSecondIsSeenAtTheNextSync() throws {
        let fleet = try Fleet()
        let nginx = try NginxServer(root: fleet.www)
        defer { nginx.stop() }
        try fleet.t.setManifestSetting("remote.url", nginx.url("/directive.json"))
        // Published this very second: its validators cannot tell a same-second twin, so none are kept.
        _ = try Self.publishTwinsAfterFirstSync(fleet, modified: Int(Date().timeIntervalSince1970), firstSyncs: 1)
        let (count, outcomes) = try Self.syncsUntilRollforward(fleet, limit: 2)
        #expect(count == 1, "outcomes: \(outcomes)")
        #expect(try fleet.activeSlot() == "current")
    }

    @Test func aChangeHiddenBehindA304IsSeenWithinTwoSyncs() throws {
        let fleet = try Fleet()
        let nginx = try NginxServer(root: fleet.www)
        defer { nginx.stop() }
        try fleet.t.setManifestSetting("remote.url", nginx.url("/directive.json"))
        // Published an hour ago: its validators are kept and sent; the twin keeps them too.
        let first = try Self.publishTwinsAfterFirstSync(fleet, modified: Int(Date().timeIntervalSince1970) - 3600, firstSyncs: 1)
        #expect(first == ["applied"])
        let (count, outcomes) = try Self.syncsUntilRollforward(fleet, limit: 3)
        // The first check after the change is answered 304 (nginx's ETag did not move); the
        // next one is unconditional, since a 304 is never followed by another.
        #expect(outcomes.first == "unchanged", "outcomes: \(outcomes)")
        #expect(count == 2, "outcomes: \(outcomes)")
        #expect(try fleet.activeSlot() == "current")
    }

    @Test func anInstallOutsideTheRolloutRefusesAReplayedOlderSerial() throws {
        let fleet = try Fleet()
        let t = fleet.t
        let nginx = try NginxServer(root: fleet.www)
        defer { nginx.stop() }
        try t.setManifestSetting("remote.url", nginx.url("/directive.json"))
        // Signed first, kept aside by an attacker (or a stale mirror): serial 19, for everybody.
        let replay = try Self.sign(fleet, decision: "previous", serial: 19, reason: "old rollback", name: "old.json")
        // Serial 20 reaches 0% of installs: this one is outside it, applies nothing, but has seen 20.
        try Self.sign(fleet, decision: "previous", serial: 20, reason: "canary rollback", extra: ["--rollout-percent", "0"])
        let (seen, _) = try fleet.sync()
        #expect(seen.status == 0, "\(seen)")
        var remote = try fleet.remote()
        #expect(remote.outcome == "not_applicable")
        #expect(remote.code == "outside_rollout")
        #expect(remote.highestSeenSerial == 20)
        #expect(remote.acceptedSerial == nil)

        try FileManager.default.removeItem(atPath: fleet.www + "/directive.json")
        try FileManager.default.moveItem(atPath: replay, toPath: fleet.www + "/directive.json")
        let stateBefore = try? String(contentsOfFile: t.state + "/state", encoding: .utf8)
        let (result, _) = try fleet.sync()
        let reason = "Directive serial 19 is older than serial 20, which this install has already verified (a replay or a stale copy); publish a directive with a serial above 20."
        #expect(result.status == 1)
        #expect(result.stderr == "Error: \(reason)\n")
        remote = try fleet.remote()
        #expect(remote.outcome == "refused")
        #expect(remote.code == "replayed_serial")
        #expect(remote.reason == reason)
        #expect(remote.consecutiveFailures == 1)
        #expect(try fleet.activeSlot() == "current")
        #expect((try? String(contentsOfFile: t.state + "/state", encoding: .utf8)) == stateBefore)
    }

    @Test func aServerAnswering304ForEverMakesTheInstallStaleAfterTheDirectiveExpires() throws {
        let fleet = try Fleet()
        let t = fleet.t
        let server = try LocalHTTPServer.hostile(root: fleet.www)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/not-modified-forever/directive.json"))
        let path = try Self.sign(fleet, decision: "previous", serial: 30, reason: "rollback", extra: ["--expires-in", "3s"])
        try Self.setModified(path, to: Int(Date().timeIntervalSince1970) - 3600)
        let (applied, _) = try fleet.sync()
        #expect(applied.status == 0, "\(applied)")
        var remote = try fleet.remote()
        #expect(remote.stale == false)
        let expiry = try #require(remote.heldExpiresAt)
        #expect(remote.lastVerifiedAt != nil)
        #expect(try fleet.activeSlot() == "previous")

        // The directive expires; the mirror answers every conditional request 304.
        #expect(waitUntil(seconds: 10) { Date().timeIntervalSince1970 >= Double(Self.unixTime(expiry) + 1) })
        let (frozen, _) = try fleet.sync()
        #expect(frozen.status == 0, "\(frozen)")
        remote = try fleet.remote()
        #expect(remote.outcome == "unchanged")
        #expect(remote.stale == true)
        #expect(remote.staleCause == "held_directive_expired")
        #expect(remote.staleSince == expiry)
        let sentence = try #require(remote.staleReason)
        #expect(sentence.hasPrefix("Stale: the directive this install holds expired at "))
        #expect(sentence.contains("rollbackctl sign --renew"))
        #expect(frozen.stderr == "Warning: \(sentence)\n")
        #expect(try t.rollbackctl("status").stdout.contains("\nRemote: \(sentence)\n"))
        #expect(try fleet.activeSlot() == "previous")

        // Still stale at the next check (now unconditional: the expired directive is refused);
        // the history holds the episode once.
        let (expired, _) = try fleet.sync()
        #expect(expired.status == 1)
        #expect(try fleet.remote().code == "expired")
        #expect(try fleet.remote().stale == true)
        let staleEvents = try t.history().filter { $0.kind == "remote_stale" }
        #expect(staleEvents.count == 1)
        #expect(staleEvents.first?.reason == sentence)
        #expect(try fleet.activeSlot() == "previous")
    }

    static func unixTime(_ rfc3339: String) -> Int {
        let formatter = ISO8601DateFormatter()
        return Int(formatter.date(from: rfc3339)?.timeIntervalSince1970 ?? 0)
    }
}

/// `rollbackctl sign --renew`: TUF's timestamp role in one command an operator puts in cron.
@Suite struct RenewDirectiveTests {
    typealias Fleet = RemoteDirectiveTests.Fleet

    static func payload(_ path: String) throws -> [String: Any] {
        let envelope = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        let payload = try #require(Data(base64Encoded: envelope["payload"] as! String))
        return try JSONSerialization.jsonObject(with: payload) as! [String: Any]
    }

    @Test func renewKeepsTheDecisionAndMovesSerialAndExpiryAndInstallsStayFresh() throws {
        let fleet = try Fleet()
        let t = fleet.t
        let nginx = try NginxServer(root: fleet.www)
        defer { nginx.stop() }
        try t.setManifestSetting("remote.url", nginx.url("/directive.json"))
        let path = try NginxDirectiveTests.sign(fleet, decision: "previous", serial: 5, reason: "bad build", extra: ["--rollout-percent", "100"])
        let (applied, _) = try fleet.sync()
        #expect(applied.status == 0, "\(applied)")
        let historyBefore = try t.history().count

        let renewed = try t.rollbackctl("sign", "--renew", path, "--key", fleet.keys + "/directive.key", "--expires-in", "1d")
        #expect(renewed.status == 0, "\(renewed)")
        let after = try Self.payload(path)
        let serial = try #require(after["serial"] as? Int)
        #expect(serial > 5)
        #expect(serial >= Int(Date().timeIntervalSince1970) - 60)
        #expect(after["decision"] as? String == "run_previous")
        #expect(after["reason"] as? String == "bad build")
        #expect(after["rollout_percent"] as? Int == 100)
        #expect(after["applies_to"] as? [String] == [t.currentVersion])
        let expires = try #require(after["expires_at"] as? String)
        #expect(renewed.stdout == "Renewed directive serial 5 as serial \(serial) (run the previous slot on \(t.currentVersion)), expires \(expires); wrote \(path).\n")

        let (fresh, _) = try fleet.sync()
        #expect(fresh.status == 0, "\(fresh)")
        let remote = try fleet.remote()
        #expect(remote.acceptedSerial == UInt64(serial))
        #expect(remote.heldExpiresAt == expires)
        #expect(remote.stale == false)
        #expect(try fleet.activeSlot() == "previous")
        #expect(try t.history().count == historyBefore, "a renewal in force is not a switch")
    }

    @Test func renewRefusesAFileItsKeyDidNotSignAndFieldsItWouldDrop() throws {
        let fleet = try Fleet()
        let t = fleet.t
        let path = try NginxDirectiveTests.sign(fleet, decision: "previous", serial: 5, reason: "bad build")
        let stranger = t.directory + "/stranger"
        #expect(try t.rollbackctl("keygen", "--out", stranger).status == 0)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))

        let foreign = try t.rollbackctl("sign", "--renew", path, "--key", stranger + "/directive.key")
        #expect(foreign.status == 1)
        #expect(foreign.stderr.hasPrefix("Error: \(path) is not signed by key "))
        #expect(foreign.stderr.hasSuffix(" (or was altered since); renew only a directive you signed with these keys.\n"))

        let dropping = try t.rollbackctl("sign", "--renew", path, "--key", fleet.keys + "/directive.key", "--decision", "current")
        #expect(dropping.status == 64)
        #expect(dropping.stderr.hasPrefix("Error: '--renew' keeps the directive's fields; drop '--decision' (or sign a new directive without '--renew').\n"))

        let backwards = try t.rollbackctl("sign", "--renew", path, "--key", fleet.keys + "/directive.key", "--serial", "5")
        #expect(backwards.status == 1)
        #expect(backwards.stderr == "Error: The new serial 5 is not above \(path)'s serial 5, so installs would refuse it as a replay; give a higher '--serial' or none.\n")

        let missing = try t.rollbackctl("sign", "--renew", t.directory + "/nothing.json", "--key", fleet.keys + "/directive.key")
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("Error: Could not read \(t.directory)/nothing.json: "))
        #expect(missing.stderr.hasSuffix("; give the directive file to renew.\n"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original)
    }
}
