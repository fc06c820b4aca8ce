import Synchronization
import Testing

/// The poller that later tests trust to say "no client saw the switch": each way a request
/// can end, against a server started here that ends it that way.
struct HTTPPollerTests {
    /// Runs a poller until it sent `requests` requests, and returns its summary.
    func poll(port: Int, requests: Int, timeout: Duration = .seconds(2)) throws -> HTTPPoller.Summary {
        let poller = try HTTPPoller(port: port, interval: .milliseconds(2), timeout: timeout, maxRequests: requests,
                                    maxDuration: .seconds(10))
        #expect(waitUntil(seconds: 10) { poller.summary().end != .running })
        return poller.stop()
    }

    @Test func countsEvery200AsOKWithItsBody() throws {
        let server = try LoopbackHTTPServer { _ in .answer(status: 200, body: "version 1.2.0 slot current pid 123") }
        let summary = try poll(port: server.port, requests: 20)
        #expect(summary.end == .requestLimit)
        #expect(summary.requests == 20 && summary.ok == 20 && summary.failed == 0, "\(summary)")
        #expect(summary.records.first?.outcome == .ok("version 1.2.0 slot current pid 123"))
        #expect(summary.versionsSeen == ["1.2.0"])
    }

    @Test func countsAClosedPortAsRefused() throws {
        let summary = try poll(port: try unusedLocalPort(), requests: 10)
        #expect(summary.refused == 10 && summary.failed == 10 && summary.ok == 0, "\(summary)")
        #expect(summary.versionsSeen.isEmpty)
    }

    @Test func countsACloseWithoutAnAnswerAsReset() throws {
        let server = try LoopbackHTTPServer { _ in .closeWithoutAnswer }
        let summary = try poll(port: server.port, requests: 10)
        #expect(summary.reset == 10 && summary.failed == 10, "\(summary)")
    }

    @Test func countsA500AsAnHTTPError() throws {
        let server = try LoopbackHTTPServer { _ in .answer(status: 500, body: "broken") }
        let summary = try poll(port: server.port, requests: 10)
        #expect(summary.httpErrors == 10 && summary.failed == 10, "\(summary)")
        #expect(summary.records.allSatisfy { $0.outcome == .httpError(500) })
    }

    @Test func countsASilentServerAsTimedOutWithinTheTimeout() throws {
        let server = try LoopbackHTTPServer { _ in .hang }
        let summary = try poll(port: server.port, requests: 3, timeout: .milliseconds(100))
        #expect(summary.timedOut == 3 && summary.failed == 3, "\(summary)")
        #expect(summary.records.allSatisfy { $0.duration < .milliseconds(1000) }, "\(summary.records)")
    }

    @Test func listsTheVersionsInTheOrderTheyChanged() throws {
        let version = Mutex("1.0.0")
        let server = try LoopbackHTTPServer { _ in .answer(status: 200, body: "version \(version.withLock { $0 }) slot current") }
        let poller = try HTTPPoller(port: server.port, interval: .milliseconds(2), maxDuration: .seconds(10))
        for next in ["1.1.0", "1.0.0"] {
            let current = version.withLock { $0 }
            #expect(waitUntil(seconds: 5) { poller.summary().versionsSeen.last == current })
            version.withLock { $0 = next }
        }
        #expect(waitUntil(seconds: 5) { poller.summary().versionsSeen.count == 3 })
        let summary = poller.stop()
        #expect(summary.end == .stopped)
        #expect(summary.versionsSeen == ["1.0.0", "1.1.0", "1.0.0"], "\(summary)")
        #expect(summary.failed == 0, "\(summary)")
        #expect(poller.stop().requests == summary.requests, "a second stop() sends nothing more")
    }

    @Test func keepsSlowRequestsInFlightAndCountsThemApart() throws {
        let server = try LoopbackHTTPServer { path in
            path.hasPrefix("/slow") ? .answer(status: 200, body: "slow done", delay: .milliseconds(200))
                                    : .answer(status: 200, body: "version 2.0.0")
        }
        let poller = try HTTPPoller(port: server.port, interval: .milliseconds(5), maxDuration: .milliseconds(500),
                                    slowRequests: .init(concurrency: 3, path: "/slow?ms=200"))
        #expect(waitUntil(seconds: 5) { poller.summary().end != .running })
        let summary = poller.stop()
        #expect(summary.end == .timeLimit)
        #expect(summary.versionsSeen == ["2.0.0"], "slow bodies stay out of the short requests: \(summary)")
        #expect(summary.failed == 0 && summary.ok > 10, "\(summary)")
        // Three threads, 200 ms each, over 500 ms: at least two rounds of three, all answered.
        #expect(summary.slowRecords.count >= 6 && summary.slowFailed == 0, "\(summary)")
        #expect(summary.slowRecords.allSatisfy { $0.outcome == .ok("slow done") && $0.duration >= .milliseconds(200) })
        // The first three were in flight together.
        let first = try #require(summary.slowRecords.first)
        #expect(summary.slowRecords.prefix(3).allSatisfy { $0.start < first.start + first.duration })
        // stop() joined them: none is still running, so none can start after the window.
        #expect(summary.slowRecords.allSatisfy { $0.start - summary.startedAt < .milliseconds(500) })
    }

    @Test func parsesContentLengthChunkedAndCloseDelimitedResponses() {
        func parse(_ text: String, atEndOfFile: Bool = false) -> HTTPResponse.Parse {
            HTTPResponse.parse(Array(text.utf8), atEndOfFile: atEndOfFile)
        }
        #expect(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel") == .incomplete)
        #expect(parse("HTTP/1.1 200 OK\r\ncontent-length:5\r\n\r\nhello") == .complete(status: 200, body: Array("hello".utf8)))
        #expect(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n") == .incomplete)
        #expect(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n")
            == .complete(status: 200, body: Array("hello world".utf8)))
        #expect(parse("HTTP/1.0 404 Not Found\r\n\r\ngone") == .incomplete)
        #expect(parse("HTTP/1.0 404 Not Found\r\n\r\ngone", atEndOfFile: true) == .complete(status: 404, body: Array("gone".utf8)))
        #expect(parse("SSH-2.0-OpenSSH_9.6\r\n") == .malformed("not an HTTP response"))
        #expect(HTTPPoller.versionKey(of: "version 1.2.0 slot current pid 123") == "1.2.0")
        #expect(HTTPPoller.versionKey(of: "<html>\nhello") == "<html>")
    }
}
