#if canImport(Glibc)
import Glibc
#endif

extension HTTPPoller {
    /// One `GET path` to 127.0.0.1:`port` on a new TCP connection, with `Connection: close`.
    /// A blocking socket whose `SO_SNDTIMEO` and `SO_RCVTIMEO` are `timeout`, and a deadline
    /// of `timeout` over the whole request, so a server that trickles bytes cannot hold it
    /// longer. Never throws and never raises SIGPIPE: every way it can end is an `Outcome`.
    static func request(port: Int, path: String, timeout: Duration) -> Outcome {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .other("socket: \(errorText(errno))") }
        defer { close(fd) }

        let (seconds, attoseconds) = timeout.components
        var limit = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        if limit.tv_sec == 0 && limit.tv_usec == 0 { limit.tv_usec = 1 }  // zero would mean "no timeout"
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))

        if let failure = connectLoopback(fd, port: port, deadline: deadline) { return failure }

        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count >= 0 { sent += count; continue }
            let error = errno
            if error == EINTR && clock.now < deadline { continue }
            return outcome(ofIOError: error)
        }

        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                let error = errno
                if error == EINTR && clock.now < deadline { continue }
                return outcome(ofIOError: error)
            }
            response += buffer[0..<count]
            switch HTTPResponse.parse(response, atEndOfFile: count == 0) {
            case .complete(let status, let body):
                return status == 200 ? .ok(String(decoding: body, as: UTF8.self)) : .httpError(status)
            case .malformed(let reason):
                return .other(reason)
            case .incomplete where count == 0:
                return .reset
            case .incomplete where clock.now >= deadline:
                return .timedOut
            case .incomplete:
                continue
            }
        }
    }

    /// Wraps `connect(2)` to 127.0.0.1:`port`; nil once connected. After `EINTR` the kernel
    /// goes on connecting, so it asks again until `EISCONN` (or another answer).
    private static func connectLoopback(_ fd: Int32, port: Int, deadline: ContinuousClock.Instant) -> Outcome? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var interrupted = false
        while true {
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if result == 0 { return nil }
            let error = errno
            switch error {
            case EISCONN where interrupted: return nil
            case EINTR,
                 EALREADY where interrupted:
                interrupted = true
                if ContinuousClock.now >= deadline { return .timedOut }
                if error == EALREADY { usleep(100) }
            case ECONNREFUSED: return .refused
            // A blocking connect that outlives SO_SNDTIMEO fails with EINPROGRESS on Linux.
            case EINPROGRESS, EAGAIN, ETIMEDOUT: return .timedOut
            default: return outcome(ofIOError: error)
            }
        }
    }

    private static func outcome(ofIOError error: Int32) -> Outcome {
        switch error {
        case ECONNRESET, EPIPE, ECONNABORTED: .reset
        case EAGAIN, EWOULDBLOCK, ETIMEDOUT, EINTR: .timedOut
        case ECONNREFUSED: .refused
        default: .other(errorText(error))
        }
    }

    private static func errorText(_ error: Int32) -> String { "\(String(cString: strerror(error))) (errno \(error))" }
}

/// Just enough HTTP/1.1 to know when a response is whole: a status line, headers, then a body
/// of `Content-Length` bytes, or chunks up to the last one, or else everything up to the end of
/// the connection.
enum HTTPResponse {
    enum Parse: Equatable {
        case incomplete
        case complete(status: Int, body: [UInt8])
        case malformed(String)
    }

    static func parse(_ bytes: [UInt8], atEndOfFile: Bool) -> Parse {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let headEnd = firstIndex(of: separator, in: bytes[...]) else {
            if bytes.count >= 5 && !bytes.starts(with: Array("HTTP/".utf8)) { return .malformed("not an HTTP response") }
            return .incomplete
        }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusWords = head[0].split(separator: " ", maxSplits: 2)
        guard statusWords.count >= 2, statusWords[0].hasPrefix("HTTP/"), let status = Int(statusWords[1]) else {
            return .malformed("status line \(head[0].prefix(80))")
        }
        var contentLength: Int?
        var chunked = false
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingWhitespace()
            if name == "content-length" { contentLength = Int(value) }
            if name == "transfer-encoding" && value.lowercased().contains("chunked") { chunked = true }
        }
        let body = bytes[(headEnd + separator.count)...]
        if (100..<200).contains(status) || status == 204 || status == 304 { return .complete(status: status, body: []) }
        if chunked { return dechunk(body, status: status) }
        if let contentLength {
            return body.count >= contentLength ? .complete(status: status, body: Array(body.prefix(contentLength))) : .incomplete
        }
        return atEndOfFile ? .complete(status: status, body: Array(body)) : .incomplete
    }

    private static func dechunk(_ bytes: ArraySlice<UInt8>, status: Int) -> Parse {
        var body: [UInt8] = []
        var rest = bytes
        let lineEnd: [UInt8] = [13, 10]
        while true {
            guard let end = firstIndex(of: lineEnd, in: rest) else { return .incomplete }
            let sizeText = String(decoding: rest[..<end], as: UTF8.self).prefix { $0 != ";" }.trimmingWhitespace()
            guard let size = Int(sizeText, radix: 16) else { return .malformed("chunk size \(sizeText.prefix(20))") }
            rest = rest[(end + 2)...]
            if size == 0 { return .complete(status: status, body: body) }  // trailers are not waited for
            guard rest.count >= size + 2 else { return .incomplete }
            body += rest.prefix(size)
            rest = rest.dropFirst(size + 2)
        }
    }

    private static func firstIndex(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.startIndex
        while index + needle.count <= haystack.endIndex {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}

private extension StringProtocol {
    func trimmingWhitespace() -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(String(drop(while: isBlank).reversed().drop(while: isBlank)).reversed())
    }
}
