import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The sample server's own misbehaviour on purpose (`<data dir>/misbehave`) and its metrics
/// (`GET /metrics`), through the real launcher and the test bundle's current slot, checked
/// by Debian's real `promtool`. Unsupervised: what a bake window judges comes later
/// (BakeWindowTests).
@Suite struct MisbehaviourTests {
    /// `launcher serve --http` of the test bundle's current slot, unsupervised, on a free port.
    final class SampleServer {
        let t: TestBundle
        let port: Int
        let process: SpawnedProcess
        let stderrPath: String

        /// Starts the server and waits until it answers `GET /metrics` (which never reads
        /// `misbehave`: the first request to another path does).
        init() throws {
            t = try TestBundle()
            port = try unusedLocalPort()
            stderrPath = t.directory + "/serve.err"
            process = try SpawnedProcess(t.bundle + "/bin/launcher", ["serve", "--http", "127.0.0.1:\(port)"],
                                         environment: ["SWITCHBACK_STATE_DIR": t.state, "PATH": "/usr/bin:/bin"], stderr: stderrPath)
            let port = port
            guard waitUntil(seconds: 30, { HTTPPoller.request(port: port, path: "/metrics", timeout: .seconds(2)).isOK }) else {
                throw TestFailure("the sample server did not answer on port \(port): \(stderr)")
            }
        }

        var misbehavePath: String { t.state + "/data/misbehave" }

        /// Writes the data directory's `misbehave`, or removes it (nil).
        func misbehave(_ text: String?) throws {
            guard let text else { return try FileManager.default.removeItem(atPath: misbehavePath) }
            try text.write(toFile: misbehavePath, atomically: true, encoding: .utf8)
        }

        var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

        /// Sends `count` requests for `path`, one after the other.
        func requests(_ count: Int, path: String = "/") -> [HTTPPoller.Record] {
            (0..<count).map { _ in
                let start = ContinuousClock.now
                let outcome = HTTPPoller.request(port: port, path: path, timeout: .seconds(5))
                return HTTPPoller.Record(start: start, duration: ContinuousClock.now - start, outcome: outcome)
            }
        }

        /// `GET /metrics`'s body.
        func metrics() throws -> String {
            guard case .ok(let body) = HTTPPoller.request(port: port, path: "/metrics", timeout: .seconds(5)) else {
                throw TestFailure("GET /metrics failed: \(stderr)")
            }
            return body
        }

        deinit {
            kill(process.pid, SIGKILL)
            process.wait()
            try? FileManager.default.removeItem(atPath: t.directory)
        }
    }

    /// The value of the series `name{labels...}` in an exposition, as a number.
    static func value(_ text: String, _ name: String, _ labels: [String]) -> Double? {
        MonitoringTests.value(text, name, labels).flatMap(Double.init)
    }

    /// promtool's verdict on an exposition: exit status and what it printed.
    static func promtoolCheck(_ text: String, in directory: String) throws -> ProcessResult {
        let file = directory + "/metrics.txt"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return try runProcess("/bin/bash", ["-c", "\(MonitoringTests.promtool) check metrics < '\(file)'"])
    }

    @Test func theNamedVersionAnswers500ToItsShareAndTheMetricsCountThem() throws {
        let server = try SampleServer()
        let version = server.t.currentVersion
        try server.misbehave("# a bad release, on purpose\nversion=\(version)\nerror_percent=30\n")
        let records = server.requests(300)
        let failed = records.count { $0.outcome == .httpError(500) }
        let ok = records.count { $0.outcome.isOK }
        #expect(failed + ok == 300, "only 200 and 500: \(records.filter { !$0.outcome.isOK && $0.outcome != .httpError(500) })")
        #expect(failed >= 45 && failed <= 135, "about 30% of 300 answered 500: \(failed)")
        #expect(server.stderr.contains("serve: misbehaving on purpose (\(server.misbehavePath)): 30% of requests answered 500, 0 ms added to every answer"),
                "\(server.stderr)")

        let text = try server.metrics()
        let build = try server.t.manifestValue("current.build")
        let labels = ["version=\"\(version)\"", "build=\"\(build)\""]
        #expect(Self.value(text, "sample_http_responses_total", ["code=\"500\""] + labels) == Double(failed), "\(text)")
        #expect(Self.value(text, "sample_http_responses_total", ["code=\"200\""] + labels) == Double(ok), "\(text)")
        #expect(Self.value(text, "sample_http_request_duration_seconds_count", labels) == 300, "/metrics itself is not counted: \(text)")
        #expect(Self.value(text, "sample_http_request_duration_seconds_bucket", labels + ["le=\"+Inf\""]) == 300)
        let checked = try Self.promtoolCheck(text, in: server.t.directory)
        #expect(checked.status == 0 && checked.stdout.isEmpty && checked.stderr.isEmpty, "promtool: \(checked)")
    }

    @Test func anotherVersionIgnoresTheFileAndAChangeShowsWithinASecond() throws {
        let server = try SampleServer()
        try server.misbehave("version=0.0.1\nerror_percent=100\n")
        #expect(server.requests(100).allSatisfy { $0.outcome.isOK }, "the file names another version")
        // Now it names this version: read again within a second.
        try server.misbehave("version=\(server.t.currentVersion)\nerror_percent=100\n")
        #expect(waitUntil(seconds: 5) { server.requests(1)[0].outcome == .httpError(500) })
        // Removed: healthy again.
        try server.misbehave(nil)
        #expect(waitUntil(seconds: 5) { server.requests(1)[0].outcome.isOK })
        #expect(server.requests(50).allSatisfy { $0.outcome.isOK })
    }

    @Test func theDelayIsAddedToEveryAnswerButNotToTheMetrics() throws {
        let server = try SampleServer()
        try server.misbehave("delay_ms=300\n")
        let records = server.requests(8) + server.requests(2, path: "/nowhere")
        #expect(records.prefix(8).allSatisfy { $0.outcome.isOK }, "\(records)")
        #expect(records.suffix(2).allSatisfy { $0.outcome == .httpError(404) }, "\(records)")
        #expect(records.allSatisfy { $0.duration >= .milliseconds(300) }, "every answer waits 300 ms: \(records)")

        let text = try server.metrics()
        let labels = ["version=\"\(server.t.currentVersion)\""]
        #expect(Self.value(text, "sample_http_request_duration_seconds_count", labels) == 10, "\(text)")
        #expect(Self.value(text, "sample_http_request_duration_seconds_bucket", labels + ["le=\"0.25\""]) == 0, "\(text)")
        // Added once, not twice: well under 2.5 s (a loaded CI run once took one answer past 0.5 s).
        #expect(Self.value(text, "sample_http_request_duration_seconds_bucket", labels + ["le=\"2.5\""]) == 10, "\(text)")
        #expect((Self.value(text, "sample_http_request_duration_seconds_sum", labels) ?? 0) >= 3.0, "\(text)")
        #expect(Self.value(text, "sample_http_responses_total", labels + ["code=\"404\""]) == 2, "\(text)")
    }

    @Test func aHealthyServerExportsZeroErrorsAndAFileThatDoesNotParseIsIgnoredWithOneLine() throws {
        let server = try SampleServer()
        let before = try server.metrics()
        let labels = ["version=\"\(server.t.currentVersion)\""]
        #expect(Self.value(before, "sample_http_responses_total", labels + ["code=\"500\""]) == 0, "an error ratio has a 0 to start from: \(before)")
        #expect(Self.value(before, "sample_http_responses_total", labels + ["code=\"200\""]) == 0, "\(before)")
        let checked = try Self.promtoolCheck(before, in: server.t.directory)
        #expect(checked.status == 0 && checked.stdout.isEmpty && checked.stderr.isEmpty, "promtool: \(checked)")

        try server.misbehave("error_percent=lots\n")
        #expect(server.requests(20).allSatisfy { $0.outcome.isOK })
        usleep(1_100_000)
        #expect(server.requests(5).allSatisfy { $0.outcome.isOK })
        let message = "serve: ignoring \(server.misbehavePath): line 1: error_percent wants a number from 0 to 100, not 'lots'; fix or remove the file.\n"
        #expect(server.stderr.components(separatedBy: message).count == 2, "said once: \(server.stderr)")
        #expect(Self.value(try server.metrics(), "sample_http_responses_total", labels + ["code=\"200\""]) == 25)
    }
}
