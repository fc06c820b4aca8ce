/// One request and its answer, without the socket: what `serve --http` says to what.
///
/// `GET /` answers `version <v> slot <s> pid <p>`; `GET /slow?ms=N` answers the same after
/// N milliseconds (at most 600000); `GET /metrics` answers the server's own metrics
/// (``ResponseMetrics``); `GET /notes` lists the notes, one a line, and `GET /notes/add?text=T`
/// adds one (percent-encoded, `+` for a space). Anything else is 400, 404 or 405. Every
/// response closes the connection, says how long its body is, and names the build that
/// answered and the notes format it reads (`X-Sample-Version`, `X-Sample-Notes-Format`).
enum HTTPExchange {
    /// What to do with a request.
    enum Answer: Equatable {
        /// 200 with the identity line, after sleeping `delayMilliseconds`.
        case identity(delayMilliseconds: Int)
        /// 200 with the metrics in Prometheus' text format.
        case metrics
        /// 200 with every note, one a line.
        case listNotes
        /// Adds the note, then 200 with its text.
        case addNote(String)
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
        case "/notes":
            return .listNotes
        case "/notes/add":
            let values = query.split(separator: "&").filter { $0.hasPrefix("text=") }.map { $0.dropFirst(5) }
            guard values.count == 1, let text = percentDecoded(values[0]), !text.isEmpty else {
                return badRequest("/notes/add wants text=T, percent-encoded UTF-8, not empty")
            }
            return .addNote(text)
        default:
            return .failure(status: 404, reason: "Not Found", body: "no such path: \(target[0]); try /, /slow?ms=N, /metrics, /notes or /notes/add?text=T\n")
        }
    }

    /// Prometheus' text exposition format, version 0.0.4.
    static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A whole HTTP/1.1 response: status line, `Content-Type`, `Content-Length`,
    /// `Connection: close`, then the body.
    static func response(status: Int, reason: String, body: String, contentType: String = "text/plain; charset=utf-8",
                         headers: [(String, String)] = []) -> String {
        let extra = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
        return "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n\(extra)Connection: close\r\n\r\n" + body
    }

    /// `%XX` and `+` decoded; nil for a bad escape or bytes that are not UTF-8.
    static func percentDecoded<S: StringProtocol>(_ text: S) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(0x20)
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func badRequest(_ why: String) -> Answer {
        .failure(status: 400, reason: "Bad Request", body: why + "\n")
    }
}
