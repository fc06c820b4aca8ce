import Foundation
import RollbackCtlKit
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 36, part 1, through the real binaries: a supervised sample on probation whose only
/// check is a Prometheus query, answered by a real HTTP server on 127.0.0.1 playing
/// Prometheus with text that tries to forge the analyzer's verdict (in the error text, in
/// `errorType`, in a sample value; each followed by `verdict passed` and by `verdict
/// failed`) or to reach the operator's terminal with escape sequences. The answer's text is
/// outside text: the measurement is an error, the window runs its full length, and no
/// output of `rollbackctl` holds a control byte.
@Suite struct ForgedVerdictTests {
    static let window = 8

    /// The body of a Prometheus answer (JSON: `\r\n` decodes to CR LF) and its status.
    struct Forgery: Sendable, CustomTestStringConvertible {
        let place: String
        let verdict: String
        var status: Int { place == "sample value" ? 200 : 400 }
        var body: String {
            let injected = #"x\r\nverdict \#(verdict) injected\r\n"#
            switch place {
            case "error text": return #"{"status":"error","errorType":"bad_data","error":"\#(injected)"}"#
            case "errorType": return #"{"status":"error","errorType":"bad_data\#(injected)","error":"x"}"#
            default: return #"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"\#(injected)"]}]}}"#
            }
        }
        var testDescription: String { "verdict \(verdict) in the \(place)" }
    }

    static let forgeries = ["error text", "errorType", "sample value"].flatMap { place in
        ["passed", "failed"].map { Forgery(place: place, verdict: $0) }
    }

    /// The plain test bundle, supervised on a free port, on probation for `window` s judged by
    /// one Prometheus check against `prometheus`.
    static func install(prometheus: LoopbackHTTPServer) throws -> (TestBundle, Int) {
        let t = try TestBundle()
        let port = try unusedLocalPort()
        for (key, value) in [
            "supervise": "true", "supervise.listen": "127.0.0.1:\(port)",
            "analysis.window_s": String(window), "analysis.interval_s": "1", "analysis.checks": "prom",
            "analysis.check.prom.kind": "prometheus", "analysis.check.prom.address": "http://127.0.0.1:\(prometheus.port)",
            "analysis.check.prom.query": "up", "analysis.check.prom.success": "result[0] == 1",
        ] { try t.setManifestSetting(key, value) }
        return (t, port)
    }

    static func probation(_ t: TestBundle) -> ProbationRecord? {
        (try? ProbationRecord.load(in: StateDirectory(path: t.state))) ?? nil
    }

    static func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Runs the probation to its end; returns the ended record and when its end was first seen.
    static func runWindow(_ t: TestBundle, _ port: Int) throws -> (ProbationRecord, seenAt: Int64, stderr: String) {
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"])
        defer { app.stop() }
        try #require(app.wait(upTo: 60) { probation(t)?.state == .baking }, "no probation began: \(app.stderr)")
        var seenAt: Int64 = 0
        let ended = app.wait(upTo: Double(window) + 60) {
            guard let record = probation(t), record.state != .baking else { return false }
            seenAt = nowMilliseconds()
            return true
        }
        try #require(ended, "the window did not end: \(app.stderr)")
        // The record is saved before the history entry: let the supervisor write both.
        _ = app.wait(upTo: 15) { ((try? t.history()) ?? []).contains { $0.kind.hasPrefix("probation_") } }
        return (try #require(probation(t)), seenAt, app.stderr)
    }

    @Test(arguments: forgeries)
    func aForgedVerdictInTheAnswerChangesNothing(forgery: Forgery) throws {
        let prometheus = try LoopbackHTTPServer { path in
            path.hasPrefix("/api/v1/query") ? .answer(status: forgery.status, body: forgery.body) : .answer(status: 404, body: "no\n")
        }
        defer { prometheus.stop() }
        let (t, port) = try Self.install(prometheus: prometheus)
        defer { try? FileManager.default.removeItem(atPath: t.directory) }
        let (record, seenAt, stderr) = try Self.runWindow(t, port)

        // The window ran its length: no verdict came early, and the errors judged nothing.
        #expect(record.state == .inconclusive, "\(record) \(stderr)")
        #expect(record.endsAt - record.startedAt == Int64(Self.window) * 1000)
        #expect(seenAt >= record.endsAt - 500, "ended \(record.endsAt - seenAt) ms early: \(stderr)")
        let check = try #require(record.checks.first)
        #expect(check.name == "prom" && check.phase == "error", "\(check)")
        #expect(check.sentence.contains("x verdict \(forgery.verdict) injected"), "\(check.sentence)")
        #expect(!check.sentence.unicodeScalars.contains { $0.value < 0x20 }, "\(check.sentence.debugDescription)")
        let kinds = try t.history().map(\.kind)
        #expect(kinds.contains("probation_inconclusive"), "\(kinds)")
        #expect(!kinds.contains("probation_passed") && !kinds.contains("probation_failed") && !kinds.contains("switch"), "\(kinds) \(stderr)")
        #expect(try t.health("current").verdict != "bad", "a healthy build is not rolled back")
        #expect(!stderr.contains("malformed frame"), "the analyzer's frames read: \(stderr)")
    }

    @Test func escapeSequencesFromTheServerReachNoTerminal() throws {
        let body = #"{"status":"error","errorType":"bad_data\u001b[31m","error":"\u001b]0;owned\u0007red \u001b[31mtext\u009b2J\u2028end"}"#
        let prometheus = try LoopbackHTTPServer { path in
            path.hasPrefix("/api/v1/query") ? .answer(status: 400, body: body) : .answer(status: 404, body: "no\n")
        }
        defer { prometheus.stop() }
        let (t, port) = try Self.install(prometheus: prometheus)
        defer { try? FileManager.default.removeItem(atPath: t.directory) }
        let (record, _, stderr) = try Self.runWindow(t, port)
        #expect(record.state == .inconclusive, "\(record)")
        #expect(record.checks.first?.sentence.contains("\\u{1B}]0;owned\\u{07}red \\u{1B}[31mtext\\u{9B}2J end") == true, "\(record.checks)")

        func isControl(_ scalar: Unicode.Scalar) -> Bool {
            (scalar.value < 0x20 && scalar != "\n") || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
        }
        for arguments in [["status"], ["status", "--json"], ["history"], ["history", "--json"]] {
            let result = try t.run(t.bundle + "/bin/rollbackctl", arguments)
            #expect(result.status == 0, "\(arguments): \(result)")
            #expect(!result.stdout.unicodeScalars.contains(where: isControl), "\(arguments): \(result.stdout.debugDescription)")
            #expect(!result.stderr.unicodeScalars.contains(where: isControl), "\(arguments): \(result.stderr.debugDescription)")
            #expect(result.stdout.contains("owned"), "\(arguments) shows the text, made inert: \(result.stdout)")
        }
        #expect(!stderr.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" || $0 == "\u{9B}" }, "the supervisor's journal: \(stderr.debugDescription)")
    }

    @Test func plainHTTPToAnotherHostIsRefusedAtTheSupervisorsStartAndByVerify() throws {
        let t = try TestBundle()
        defer { try? FileManager.default.removeItem(atPath: t.directory) }
        let port = try unusedLocalPort()
        for (key, value) in [
            "supervise": "true", "analysis.window_s": "60", "analysis.checks": "prom",
            "analysis.check.prom.kind": "prometheus", "analysis.check.prom.address": "http://192.0.2.1:9090",
            "analysis.check.prom.query": "up", "analysis.check.prom.success": "result[0] == 1",
        ] { try t.setManifestSetting(key, value) }
        let sentence = "analysis.check.prom.address is http://192.0.2.1:9090, plain http to a host other than loopback, where anything on the path could change the answers that judge a build; use https, or set analysis.allow_insecure_http=true to accept that."
        try Self.expectRefusedAtTheStartAndByVerify(t, port: port, sentence)

        try t.setManifestSetting("analysis.allow_insecure_http", "true")
        let accepted = try t.rollbackctl("verify")
        #expect(accepted.status == 0 && !accepted.stdout.contains("analysis"), "\(accepted)")
    }

    /// The supervisor's start (exit 70) and `rollbackctl verify` (exit 1) both refuse the
    /// manifest's analysis settings with `sentence`.
    static func expectRefusedAtTheStartAndByVerify(_ t: TestBundle, port: Int, _ sentence: String) throws {
        let start = try t.launcher("serve", "--http", "127.0.0.1:\(port)", environment: ["SWITCHBACK_SUPERVISE": "1"])
        #expect(start.status == 70, "\(start)")
        #expect(start.stderr.hasSuffix("launcher: The manifest's analysis settings are refused: \(sentence) Rebuild the bundle with switchback-bundle --analysis FILE.\n"), "\(start.stderr)")
        let verify = try t.rollbackctl("verify")
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("analysis: FAILED: \(sentence)\n"), "\(verify.stdout)")
        #expect(verify.stderr == "Error: the analysis settings failed verification; rebuild the bundle with scripts/bundle.\n")
    }
}
