import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP server inside the test process, on 127.0.0.1 and a port of the kernel's choosing,
/// that answers each connection on its own thread as `reply` says for the request's path:
/// a scripted server for testing clients (HTTPPoller) without a child process.
final class LoopbackHTTPServer: Sendable {
    enum Reply: Sendable {
        /// A whole response with `Content-Length`, sent `delay` after the request was read.
        case answer(status: Int, body: String, delay: Duration = .zero)
        /// Reads the request, then closes the connection without a byte of answer.
        case closeWithoutAnswer
        /// Reads the request and answers nothing until the client gives up or `stop()`.
        case hang
    }

    let port: Int
    private let listener: Int32
    private let connections = OpenConnections()
    private let acceptEnded = DispatchSemaphore(value: 0)
    private let isStopped = Mutex(false)

    /// Listens at once; throws when the socket cannot be bound.
    init(_ reply: @escaping @Sendable (_ path: String) -> Reply) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("LoopbackHTTPServer: socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 128) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard listening else {
            let error = errno
            close(listener)
            throw TestFailure("LoopbackHTTPServer: bind or listen: \(String(cString: strerror(error)))")
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [connections, acceptEnded] in
            defer { acceptEnded.signal() }
            while true {
                let connection = accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return  // shut down by stop()
                }
                connections.open.withLock { _ = $0.insert(connection) }
                Thread {
                    Self.serve(connection, reply)
                    connections.open.withLock { _ = $0.remove(connection) }
                    close(connection)
                }.start()
            }
        }.start()
    }

    deinit { stop() }

    /// Stops accepting and wakes every connection still open; returns once nothing accepts.
    func stop() {
        let wasStopped = isStopped.withLock { stopped in defer { stopped = true }; return stopped }
        guard !wasStopped else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        acceptEnded.wait()
        close(listener)
        connections.open.withLock { $0.forEach { shutdown($0, Int32(SHUT_RDWR)) } }
    }

    private static func serve(_ connection: Int32, _ reply: (String) -> Reply) {
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.ends(with: Array("\r\n\r\n".utf8)) {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            request += buffer[0..<count]
        }
        let requestLine = String(decoding: request.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        let path = requestLine.count >= 2 ? String(requestLine[1]) : "/"
        switch reply(path) {
        case .closeWithoutAnswer:
            return
        case .hang:
            // Until the client closes (recv returns 0) or stop() shuts the socket down.
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                if count == 0 || (count < 0 && errno != EINTR && errno != EAGAIN) { return }
            }
        case .answer(let status, let body, let delay):
            if delay > .zero { Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18) }
            let bytes = Array(body.utf8)
            let head = "HTTP/1.1 \(status) \(status == 200 ? "OK" : "Status")\r\nContent-Type: text/plain\r\n"
                + "Content-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
            let response = Array(head.utf8) + bytes
            var sent = 0
            while sent < response.count {
                let count = response[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { return }
                sent += count
            }
        }
    }
}

/// accept4(2), which the Glibc module does not export: the connection close-on-exec from
/// birth, so a child another test spawns at that moment does not keep it open.
@_silgen_name("accept4")
private func accept4(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: UnsafeMutablePointer<socklen_t>?,
                     _ flags: Int32) -> Int32

/// The accepted connections still open, for `stop()` to wake (a class: the threads share it).
private final class OpenConnections: Sendable {
    let open = Mutex<Set<Int32>>([])
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix) }
}
