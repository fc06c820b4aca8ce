extension HTTPPoller {
    /// What one request ended in.
    enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// A whole `HTTP 200` response, with its body decoded as UTF-8.
        case ok(String)
        /// `connect(2)` failed with `ECONNREFUSED`: nothing listened on the port.
        case refused
        /// The connection was reset (`ECONNRESET`, `EPIPE`) or reached end-of-file before a
        /// whole response arrived.
        case reset
        /// Connecting, sending or receiving took longer than the request's timeout.
        case timedOut
        /// A whole response with a status other than 200.
        case httpError(Int)
        /// Anything else: a socket error none of the above names (`EADDRNOTAVAIL`,
        /// `EMFILE`), or bytes that are not an HTTP response. The text says which.
        case other(String)

        var isOK: Bool { if case .ok = self { true } else { false } }

        var description: String {
            switch self {
            case .ok(let body): "ok \(HTTPPoller.versionKey(of: body))"
            case .refused: "refused"
            case .reset: "reset"
            case .timedOut: "timed out"
            case .httpError(let status): "HTTP \(status)"
            case .other(let reason): "other (\(reason))"
            }
        }
    }

    /// One request: when it started, how long it took, how it ended.
    struct Record: Sendable, CustomStringConvertible {
        /// When the poller began to connect.
        var start: ContinuousClock.Instant
        /// From `start` to the outcome.
        var duration: Duration
        var outcome: Outcome

        var description: String { "\(outcome) after \(duration.milliseconds) ms" }
    }

    /// Why the poller stopped sending.
    enum End: Sendable, Equatable {
        /// Still running (a snapshot taken before `stop()`).
        case running
        /// `stop()` was called.
        case stopped
        /// It sent `maxRequests` requests.
        case requestLimit
        /// `maxDuration` passed.
        case timeLimit
    }

    /// Everything the poller recorded, in the order the requests started; a value, so a test
    /// can keep it after `stop()` and print it in an expectation's message.
    struct Summary: Sendable, CustomStringConvertible {
        /// When the poller started; `record.start - startedAt` places a request in the window.
        var startedAt: ContinuousClock.Instant
        var end: End
        /// The short requests to `path`, one every `interval`.
        var records: [Record]
        /// The slow requests, counted apart from `records` (empty without `SlowRequests`).
        var slowRecords: [Record]

        var requests: Int { records.count }
        var ok: Int { records.count { $0.outcome.isOK } }
        var refused: Int { records.count { $0.outcome == .refused } }
        var reset: Int { records.count { $0.outcome == .reset } }
        var timedOut: Int { records.count { $0.outcome == .timedOut } }
        var httpErrors: Int { records.count { if case .httpError = $0.outcome { true } else { false } } }
        /// Every request that did not end in `.ok`.
        var failed: Int { requests - ok }
        /// The requests that did not end in `.ok`, in order.
        var failures: [Record] { records.filter { !$0.outcome.isOK } }

        var slowOK: Int { slowRecords.count { $0.outcome.isOK } }
        var slowFailed: Int { slowRecords.count - slowOK }

        /// The version of each 200 body, each time it changed: ["1.0.0", "1.1.0", "1.0.0"]
        /// for a switch and a switch back. A body's version is the word after "version"
        /// (`version 1.2.0 slot current pid 123` gives "1.2.0"); a body without one counts
        /// as its first line, cut to 80 characters. scripts/lib/http-poller.py does the same.
        var versionsSeen: [String] {
            var seen: [String] = []
            for record in records {
                guard case .ok(let body) = record.outcome else { continue }
                let key = HTTPPoller.versionKey(of: body)
                if seen.last != key { seen.append(key) }
            }
            return seen
        }

        var description: String {
            var text = "\(requests) requests (\(end)): \(ok) ok, \(refused) refused, \(reset) reset, \(timedOut) timed out, "
                + "\(httpErrors) HTTP errors, \(failed - refused - reset - timedOut - httpErrors) other; "
                + "versions \(versionsSeen.joined(separator: " -> "))"
            if !slowRecords.isEmpty { text += "; slow: \(slowOK) ok, \(slowFailed) failed" }
            let shown = (failures + slowRecords.filter { !$0.outcome.isOK }).prefix(10)
            if !shown.isEmpty {
                text += "; first failures: " + shown.map { "+\(($0.start - startedAt).milliseconds) ms \($0.outcome)" }
                    .joined(separator: ", ")
            }
            return text
        }
    }

    /// The word after the first "version" in `body`, or else its first line cut to 80 characters.
    static func versionKey(of body: String) -> String {
        let words = body.split(whereSeparator: \.isWhitespace)
        if let index = words.firstIndex(of: "version"), index + 1 < words.count { return String(words[index + 1]) }
        return String(body.prefix { $0 != "\n" && $0 != "\r" }.prefix(80))
    }
}

extension Duration {
    /// Milliseconds to three places, for messages: 12.345.
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return ((Double(seconds) * 1e3 + Double(attoseconds) / 1e15) * 1e3).rounded() / 1e3
    }
}
