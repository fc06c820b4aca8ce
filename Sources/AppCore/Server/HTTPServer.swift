#if canImport(Glibc)
import Glibc
#endif
import Switchback
import Synchronization

/// `serve --http`: a small HTTP/1.1 server on plain sockets, a thread per connection, so a
/// slow request never holds up another. It counts what it answers (``ResponseMetrics``, at
/// `GET /metrics`) and misbehaves when its data directory says so (``Misbehaviour``).
///
/// It listens on an address it binds itself (`SO_REUSEADDR`), or on the first listening socket
/// the service manager passed (``LaunchInfo/listeners``). An acceptor thread waits in `poll(2)`
/// on the listening socket and on a wake-up socket; ``stopAccepting()`` wakes it, joins it and
/// closes the listening socket; the requests already read then finish, and ``connectionCount``
/// says how many are left. A connection still sending its request when the server stops is shut down, so an
/// idle client cannot hold the process up.
final class HTTPServer: Sendable {
    /// Where to listen.
    enum Source: Equatable {
        /// Bind `host:port` (`host` empty: every address).
        case address(host: String, port: UInt16)
        /// The first listening socket the service manager passed.
        case inherited
    }

    /// Why the server could not listen: one sentence for `Error: ...`.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The address it listens on, numeric (`127.0.0.1:8080`, `[::1]:8080`).
    let address: String
    private let launch: LaunchInfo
    private let listener: Int32
    private let wakeWriter: Int32
    private let wakeReader: Int32
    private let acceptor = Mutex<Thread?>(nil)
    private let connections = Mutex(Connections())
    /// How this build misbehaves on purpose (the data directory's `misbehave`), if it does.
    private let misbehaviourFile: MisbehaviourFile
    /// What it answered, for `GET /metrics`.
    private let metrics = Mutex(ResponseMetrics())

    /// The connections being served: those still reading their request, and how many in all.
    private struct Connections {
        var reading: Set<Int32> = []
        var count = 0
    }

    /// Listens on `source` and starts accepting. Throws when it cannot listen.
    static func start(_ source: Source, launch: LaunchInfo) throws(Failure) -> HTTPServer {
        let listener: Int32
        switch source {
        case .address(let host, let port):
            listener = try bind(host: host, port: port)
        case .inherited:
            guard let inherited = launch.listeners.first else {
                throw Failure(description: "serve --inherited: no listening socket was passed to this process (LISTEN_FDS and LISTEN_PID are not set for it); drop --inherited to bind the address.")
            }
            listener = inherited.fileDescriptor
            // Already listening when systemd or the supervisor passes it; listen(2) again only
            // checks that it is a socket that can.
            guard listen(listener, 128) == 0 else {
                let code = errno
                throw Failure(description: "serve --inherited: descriptor \(listener) (\(inherited.name)) cannot listen: \(describe(code)).")
            }
        }
        // Non-blocking, so that an acceptor woken for a connection another process took
        // (the socket may be shared) returns to poll(2) instead of waiting in accept(2).
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            let code = errno
            close(listener)
            throw Failure(description: "serve --http cannot make its wake-up socket: \(describe(code)).")
        }
        let server = HTTPServer(launch: launch, listener: listener, wake: (pair[0], pair[1]))
        guard let thread = Thread.start(detached: false, { server.acceptConnections() }) else {
            let code = errno
            server.stopAccepting()
            throw Failure(description: "serve --http cannot start its acceptor thread: \(describe(code)).")
        }
        server.acceptor.withLock { $0 = thread }
        return server
    }

    private init(launch: LaunchInfo, listener: Int32, wake: (reader: Int32, writer: Int32)) {
        self.launch = launch
        misbehaviourFile = MisbehaviourFile(dataDirectory: launch.dataDirectory, version: launch.version)
        self.listener = listener
        wakeReader = wake.reader
        wakeWriter = wake.writer
        address = Self.localAddress(of: listener)
    }

    /// Stops accepting at once: wakes and joins the acceptor, closes the listening socket,
    /// and shuts down the connections that have not sent a whole request yet.
    func stopAccepting() {
        close(wakeWriter)
        acceptor.withLock { $0 }?.join()
        close(wakeReader)
        close(listener)
        connections.withLock { connections in
            for fd in connections.reading { shutdown(fd, Int32(SHUT_RD)) }
        }
    }

    /// The connections not closed yet: after ``stopAccepting()``, the requests in flight.
    var connectionCount: Int { connections.withLock { $0.count } }

    // MARK: Listening

    /// A new socket bound to `host:port` with `SO_REUSEADDR`, listening: the first address
    /// `getaddrinfo(3)` gives that works.
    private static func bind(host: String, port: UInt16) throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &found)
        guard resolved == 0 else {
            throw Failure(description: "cannot listen on \(host):\(port): \(String(cString: gai_strerror(resolved))).")
        }
        defer { freeaddrinfo(found) }
        var code: Int32 = 0
        var next = found
        while let info = next {
            next = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else { code = errno; continue }
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, listen(fd, 128) == 0 {
                return fd
            }
            code = errno
            close(fd)
        }
        throw Failure(description: "cannot listen on \(host):\(port): \(describe(code)).")
    }

    /// The socket's own address, numeric, with its port.
    private static func localAddress(of fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let named = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getsockname(fd, address, &length) == 0
                    && getnameinfo(address, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                                   NI_NUMERICHOST | NI_NUMERICSERV) == 0
            }
        }
        guard named else { return "descriptor \(fd)" }
        let hostText = host.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let serviceText = service.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return (storage.ss_family == sa_family_t(AF_INET6) ? "[\(hostText)]" : hostText) + ":" + serviceText
    }

    // MARK: Accepting

    /// The acceptor thread: waits for a connection or the wake-up, and gives each connection
    /// a thread of its own.
    private func acceptConnections() {
        var waiters = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&waiters, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0, waiters[1].revents == 0 else { return }
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else {
                // EAGAIN: another process took it. Anything else (out of descriptors, a socket
                // shut down elsewhere) would make poll(2) return at once again: pause first.
                if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { sleep(milliseconds: 10) }
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            connections.withLock { connections in
                connections.count += 1
                connections.reading.insert(fd)
            }
            if Thread.start(detached: true, { self.serve(fd) }) == nil {
                // No thread to give: say so rather than leave the client waiting.
                _ = connections.withLock { $0.reading.remove(fd) }
                send(HTTPExchange.response(status: 503, reason: "Service Unavailable", body: "no thread for this connection\n"), to: fd)
                close(fd)
                connections.withLock { $0.count -= 1 }
            }
        }
    }

    // MARK: Serving one connection

    /// A connection's thread: reads the request's head, answers, closes.
    private func serve(_ fd: Int32) {
        defer {
            close(fd)
            connections.withLock { $0.count -= 1 }
        }
        // A client that stops sending is let go after 10 s.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let head = readHead(fd)
        // Out of the reading set before the fd can be closed: a stop never shuts down another
        // connection that reuses the number.
        _ = connections.withLock { $0.reading.remove(fd) }
        // A whole request read before the stop is answered; one cut short by it is not.
        guard let head else { return }
        let started = monotonicSeconds()
        let answer = HTTPExchange.answer(toHead: head)
        let notes = NotesStore(directory: launch.dataDirectory, version: launch.version)
        // Which build answered and which notes format it reads, on every response.
        let identityHeaders = [("X-Sample-Version", launch.version), ("X-Sample-Notes-Format", String(notes.format))]
        if answer == .metrics {
            let body = metrics.withLock { $0.exposition(version: launch.version, build: launch.build) }
            send(HTTPExchange.response(status: 200, reason: "OK", body: body, contentType: HTTPExchange.metricsContentType, headers: identityHeaders), to: fd)
            return
        }
        let misbehaviour = misbehaviourFile.current(now: started)
        misbehaviour?.work()
        if let delay = misbehaviour?.delayMilliseconds, delay > 0 { sleep(milliseconds: delay) }
        let response: (status: Int, reason: String, body: String)
        switch answer {
        case .identity(let delay):
            if delay > 0 { sleep(milliseconds: delay) }
            let identity = "version \(launch.version) slot \(launch.slot?.rawValue ?? "none") pid \(getpid())"
            var generator = SystemRandomNumberGenerator()
            if let misbehaviour, misbehaviour.failsRequest(using: &generator) {
                response = (500, "Internal Server Error", identity + ": failing on purpose (\(misbehaviourFile.path))\n")
            } else {
                response = (200, "OK", identity + "\n")
            }
        case .listNotes:
            if let problem = notes.formatProblem() {
                response = (500, "Internal Server Error", problem + "\n")
            } else {
                response = (200, "OK", notes.list().map { $0 + "\n" }.joined())
            }
        case .addNote(let text):
            if let problem = notes.formatProblem() {
                response = (500, "Internal Server Error", problem + "\n")
            } else if notes.add(text) {
                response = (200, "OK", text + "\n")
            } else {
                response = (500, "Internal Server Error", "the note could not be written to \(notes.currentPath)\n")
            }
        case .failure(let status, let reason, let body):
            response = (status, reason, body)
        case .metrics:
            preconditionFailure("answered above")
        }
        // Counted before it is sent: a client that asks for /metrics once it has its answer
        // finds it counted.
        metrics.withLock { $0.record(status: response.status, seconds: monotonicSeconds() - started) }
        send(HTTPExchange.response(status: response.status, reason: response.reason, body: response.body, headers: identityHeaders), to: fd)
    }

    /// The request's head, up to its blank line (at most 16 KiB); nil when the client closed,
    /// timed out or was shut down first, or sent more than that.
    private func readHead(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 16384 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            bytes += buffer[0..<count]
            if let end = bytes.firstRange(of: [13, 10, 13, 10]) {
                return String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
            }
        }
        send(HTTPExchange.response(status: 431, reason: "Request Header Fields Too Large", body: "the request's head is over 16 KiB\n"), to: fd)
        return nil
    }

    /// Writes all of `text`, without SIGPIPE if the client has gone.
    private func send(_ text: String, to fd: Int32) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 && errno == EINTR { continue }
                guard sent > 0 else { return }
                offset += sent
            }
        }
    }
}

/// `strerror(3)`'s sentence for `code`, without its final period.
func describe(_ code: Int32) -> String {
    String(cString: strerror(code))
}
