#if canImport(Glibc)
import Glibc
#endif

/// A request: its method, path and body (the headers are read and dropped).
struct HTTPRequest {
    var method: String
    var path: String
    var body: String
}

struct HTTPResponse {
    var status: Int
    var body: String
}

struct SocketError: Error, CustomStringConvertible {
    var description: String
    init(_ call: String) { description = "\(call): \(String(cString: strerror(errno)))" }
}

/// HTTP/1.1 on a Glibc socket bound to 127.0.0.1: one request per connection, answered with
/// `Connection: close`, one connection at a time. Enough for a health check and a few notes.
final class HTTPServer {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        // The next start (a restart, a switch of slot) binds the same port at once.
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { let error = SocketError("bind"); close(fd); throw error }
        guard listen(fd, 64) == 0 else { let error = SocketError("listen"); close(fd); throw error }
    }

    deinit { close(fd) }

    /// Waits up to `waitingMilliseconds` for a connection; answers it if one comes.
    func serveOne(waitingMilliseconds: Int32, _ handler: (HTTPRequest) -> HTTPResponse) {
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, waitingMilliseconds) == 1 else { return }
        let client = accept(fd, nil, nil)
        guard client >= 0 else { return }
        defer { close(client) }
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        // A client that stops sending must not stall the server for good.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let response: HTTPResponse
        if let request = Self.read(client) {
            response = handler(request)
        } else {
            response = HTTPResponse(status: 400, body: "bad request\n")
        }
        Self.write(response, to: client)
    }

    static func read(_ client: Int32) -> HTTPRequest? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headerEnd: Int?
        var contentLength = 0
        while true {
            if headerEnd == nil, let end = find([13, 10, 13, 10], in: bytes) {
                headerEnd = end + 4
                let head = String(decoding: bytes[..<end], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length" {
                        contentLength = Int(parts[1].filter { $0 != " " }) ?? 0
                    }
                }
            }
            if let headerEnd, bytes.count >= headerEnd + contentLength { break }
            guard bytes.count < 1 << 20 else { return nil }
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            bytes += buffer[..<count]
        }
        guard let headerEnd else { return nil }
        let head = String(decoding: bytes[..<headerEnd], as: UTF8.self)
        let requestLine = head.split(separator: "\r\n").first?.split(separator: " ") ?? []
        guard requestLine.count == 3 else { return nil }
        let body = String(decoding: bytes[headerEnd..<(headerEnd + contentLength)], as: UTF8.self)
        return HTTPRequest(method: String(requestLine[0]), path: String(requestLine[1]), body: body)
    }

    static func write(_ response: HTTPResponse, to client: Int32) {
        let reason = [200: "OK", 201: "Created", 400: "Bad Request", 404: "Not Found",
                      405: "Method Not Allowed", 500: "Internal Server Error"][response.status] ?? "Status"
        let body = Array(response.body.utf8)
        let head = "HTTP/1.1 \(response.status) \(reason)\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Array(head.utf8) + body
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            sent += count
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
