/// One request and its answer, without the socket: what `serve --http` says to what.
///
/// `GET /` answers `version <v> slot <s> pid <p>`; `GET /slow?ms=N` answers the same after
/// N milliseconds (at most 600000); `GET /metrics` answers the server's own metrics
/// (``ResponseMetrics``). Anything else is 400, 404 or 405. Every response closes the
/// connection and says how long its body is.
enum HTTPExchange {
    /// What to do with a request.
    enum Answer: Equatable {
        /// 200 with the identity line, after sleeping `delayMilliseconds`.
        case identity(delayMilliseconds: Int)
        /// 200 with the metrics in Prometheus' text format.
        case metrics
        /// An error status and its one-line body.
        case failure(status: Int, reason: String, body: String)
    }

    static let longestDelayMilliseconds = 600_000

    /// Decides the answer from the request's head (its lines up to the blank one).
    static func answer(toHead head: String) -> Answer {
        // "\r\n" is one Character in Swift.
        let requestLine = head[..<(head.firstIndex(of: "\r\n" as Character) ?? head.endIndex)]
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else {
            return badRequest("the request line is not METHOD TARGET HTTP/1.x")
        }
        guard parts[0] == "GET" else {
            return .failure(status: 405, reason: "Method Not Allowed", body: "only GET is served here\n")
        }
        let target = parts[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let query = target.count == 2 ? target[1] : ""
        switch target[0] {
        case "/":
            return .identity(delayMilliseconds: 0)
        case "/slow":
            let values = query.split(separator: "&").filter { $0.hasPrefix("ms=") }.map { $0.dropFirst(3) }
            guard values.count == 1, let milliseconds = Int(values[0]), values[0].allSatisfy({ $0 >= "0" && $0 <= "9" }),
                  milliseconds <= longestDelayMilliseconds else {
                return badRequest("/slow wants ms=N, a whole number of milliseconds up to \(longestDelayMilliseconds)")
            }
            return .identity(delayMilliseconds: milliseconds)
        case "/metrics":
            return .metrics
        default:
            return .failure(status: 404, reason: "Not Found", body: "no such path: \(target[0]); try /, /slow?ms=N or /metrics\n")
        }
    }

    /// Prometheus' text exposition format, version 0.0.4.
    static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A whole HTTP/1.1 response: status line, `Content-Type`, `Content-Length`,
    /// `Connection: close`, then the body.
    static func response(status: Int, reason: String, body: String, contentType: String = "text/plain; charset=utf-8") -> String {
        "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }

    private static func badRequest(_ why: String) -> Answer {
        .failure(status: 400, reason: "Bad Request", body: why + "\n")
    }
}
