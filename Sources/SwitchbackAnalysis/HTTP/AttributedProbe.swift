#if canImport(Glibc)
import Glibc
#endif

/// One HTTP GET whose answer is attributed to the process that accepted its connection, with
/// no help from the app: for a baseline and a canary that both accept on one shared listening
/// socket (any server: an epoll loop such as NIO's, or a thread per connection).
///
/// After `connect` and before the request is written, the probe asks the kernel for the
/// server's side of its connection (an exact NETLINK_SOCK_DIAG lookup of the pair of ends): its
/// socket inode is 0 while the connection waits in the shared accept queue and non-zero once a
/// process accepted it; the holder is the candidate whose `/proc/PID/fd` holds `socket:[INODE]`.
/// It looks every 200 µs, within the timeout. Only then is the request written: the server holds
/// the descriptor while it waits for a request, so the process found is the process that answers.
///
/// The latency runs from the request's write to the answer's last byte. Time spent in the
/// shared accept queue is left out: the queue is the same for both builds, and a connection
/// waits there for whichever process accepts next, not for the one that answers.
///
/// Plain `http://` only (no TLS), HTTP/1.1 with `Connection: close`. A literal host
/// (`127.0.0.1`, `[::1]`) is used as written, `localhost` is 127.0.0.1 and then ::1, and any
/// other name is resolved with getaddrinfo(3), whose time the timeout does not bound.
///
/// What attribution needs: the analyzer in the app's network namespace, connecting to the
/// app's own address (no NAT or proxy between: the kernel is asked about the exact pair of
/// ends); candidates it may read `/proc/PID/fd` of (the same user and dumpable, or root); the
/// candidates themselves holding the accepted descriptor (not a child they hand it to).
public struct AttributedProbe: Sendable {
    /// What one probe found.
    public struct Outcome: Sendable, Equatable {
        /// The index in `pids` of the process that accepted the connection, also when its answer
        /// then failed (a build that accepts and never answers is named); nil when none of them
        /// accepted it within the timeout, or no connection was made.
        public var holder: Int?
        /// The answer's status, once a final status line arrived (also when the answer then
        /// broke off: `failure` says so).
        public var status: Int?
        /// Milliseconds from the request's write to the answer's last byte; nil unless the
        /// whole answer arrived.
        public var latencyMilliseconds: Double?
        /// The answer's body (chunks decoded), at most 64 KiB of it.
        public var body: [UInt8]
        /// Why no whole answer arrived, in a short phrase ("connection refused", "no answer
        /// within 2000 ms", "not accepted by either build within 2000 ms", "the answer does
        /// not read as HTTP"); nil exactly when the whole answer arrived.
        public var failure: String?

        /// An outcome with the given fields.
        public init(holder: Int? = nil, status: Int? = nil, latencyMilliseconds: Double? = nil, body: [UInt8] = [], failure: String? = nil) {
            self.holder = holder
            self.status = status
            self.latencyMilliseconds = latencyMilliseconds
            self.body = body
            self.failure = failure
        }
    }

    /// The URL, as given.
    public let url: String
    /// The candidates: the processes whose accepting is attributed (baseline, canary).
    public let pids: [pid_t]
    /// The bound on the whole probe: connect, attribution, request and answer.
    public let timeoutMilliseconds: Int

    /// The URL's parts; nil when it is not a plain http URL (every probe then fails).
    let parts: Parts?

    /// What a URL names.
    struct Parts: Sendable, Equatable {
        var host: Host
        var port: UInt16
        /// The Host header's value: the URL's authority as written.
        var authority: String
        /// The request target: path and query.
        var target: String
    }

    /// How long to wait between two looks at an accepted-or-not connection.
    static let lookIntervalMicroseconds = 200

    /// A probe of `url` (`http://HOST[:PORT][/PATH][?QUERY]`; HOST a name, an IPv4 address or
    /// a bracketed IPv6 one) attributed among `pids`, within `timeoutMilliseconds` (taken as 1
    /// when below, as a day when above).
    /// A URL that is not of that shape (another scheme, user information, a port outside
    /// 1–65535, a space, control or non-ASCII byte anywhere) makes every probe fail with "the
    /// URL is not http://HOST:PORT/PATH". A fragment (`#...`) is dropped, as browsers do.
    public init(url: String, pids: [pid_t], timeoutMilliseconds: Int) {
        self.url = url
        self.pids = pids
        self.timeoutMilliseconds = Swift.min(Swift.max(1, timeoutMilliseconds), 86_400_000)
        parts = Self.parse(url)
    }

    /// Connects, finds which candidate accepted, sends the GET and reads the answer. Blocks up
    /// to the timeout (plus a host name's resolution); never throws, and never keeps more than
    /// 64 KiB of headers and 64 KiB of body of whatever a server sends.
    public func probe() -> Outcome {
        guard let parts else { return Outcome(failure: "the URL is not http://HOST:PORT/PATH") }
        let deadline = MonotonicClock.nanoseconds() + Int64(timeoutMilliseconds) * 1_000_000
        let fd: Int32
        switch connect(to: parts, deadline: deadline) {
        case .failure(let failure): return Outcome(failure: failure.phrase)
        case .success(let connected): fd = connected
        }
        defer { close(fd) }
        guard let ends = Ends(socket: fd) else { return Outcome(failure: "the connection's ends do not read") }
        let holder: Int
        switch attribute(fd, ends, deadline: deadline) {
        case .failure(let failure): return Outcome(failure: failure.phrase)
        case .success(let found): holder = found
        }
        var outcome = exchange(fd, request: Self.request(parts), deadline: deadline)
        outcome.holder = holder
        return outcome
    }

    /// Why a probe ended before its request went.
    struct Failure: Error {
        let phrase: String
    }
}

// MARK: - Connecting

extension AttributedProbe {
    /// A host as the URL names it.
    enum Host: Sendable, Equatable {
        /// A literal address: AF_INET and 4 bytes, or AF_INET6 and 16, in network order.
        case address(family: Int32, bytes: [UInt8])
        /// `localhost`: 127.0.0.1, then ::1.
        case localhost
        /// Any other name, for getaddrinfo(3).
        case name(String)
    }

    /// The addresses to try, in order; empty when the name does not resolve.
    static func addresses(of host: Host) -> [(family: Int32, bytes: [UInt8])] {
        switch host {
        case .address(let family, let bytes):
            return [(family, bytes)]
        case .localhost:
            return [(AF_INET, [127, 0, 0, 1]), (AF_INET6, Array(repeating: 0, count: 15) + [1])]
        case .name(let name):
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(name, nil, &hints, &list) == 0 else { return [] }
            defer { freeaddrinfo(list) }
            var found: [(family: Int32, bytes: [UInt8])] = []
            var entry = list
            while let info = entry?.pointee {
                entry = info.ai_next
                guard let address = info.ai_addr else { continue }
                if info.ai_family == AF_INET, info.ai_addrlen >= MemoryLayout<sockaddr_in>.size {
                    let ipv4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
                    found.append((AF_INET, withUnsafeBytes(of: ipv4.sin_addr) { Array($0) }))
                } else if info.ai_family == AF_INET6, info.ai_addrlen >= MemoryLayout<sockaddr_in6>.size {
                    let ipv6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
                    found.append((AF_INET6, withUnsafeBytes(of: ipv6.sin6_addr) { Array($0) }))
                }
            }
            return found
        }
    }

    /// A connected non-blocking socket to the first address that accepts a connection.
    func connect(to parts: Parts, deadline: Int64) -> Result<Int32, Failure> {
        let addresses = Self.addresses(of: parts.host)
        guard !addresses.isEmpty else { return .failure(Failure(phrase: "host not found")) }
        var last = Failure(phrase: "connection refused")
        for address in addresses {
            switch connect(to: address, port: parts.port, deadline: deadline) {
            case .success(let fd): return .success(fd)
            case .failure(let failure): last = failure
            }
            if MonotonicClock.nanoseconds() >= deadline { break }
        }
        return .failure(last)
    }

    private func connect(to address: (family: Int32, bytes: [UInt8]), port: UInt16, deadline: Int64) -> Result<Int32, Failure> {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(Failure(phrase: "no socket: \(Self.errorText(errno))")) }
        var storage = sockaddr_storage()
        let length: Int
        if address.family == AF_INET {
            var ipv4 = sockaddr_in()
            ipv4.sin_family = sa_family_t(AF_INET)
            ipv4.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &ipv4.sin_addr) { $0.copyBytes(from: address.bytes) }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: ipv4, as: sockaddr_in.self) }
            length = MemoryLayout<sockaddr_in>.size
        } else {
            var ipv6 = sockaddr_in6()
            ipv6.sin6_family = sa_family_t(AF_INET6)
            ipv6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &ipv6.sin6_addr) { $0.copyBytes(from: address.bytes) }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: ipv6, as: sockaddr_in6.self) }
            length = MemoryLayout<sockaddr_in6>.size
        }
        let started = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(length)) }
        }
        let startError = errno
        // EINTR leaves the connection going on in the background, as EINPROGRESS does.
        if started != 0, startError != EINPROGRESS, startError != EINTR {
            close(fd)
            return .failure(Self.connectFailure(startError))
        }
        if started != 0 {
            guard Self.wait(fd, for: Int16(POLLOUT), until: deadline) else {
                close(fd)
                return .failure(Failure(phrase: "no answer within \(timeoutMilliseconds) ms"))
            }
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0 { error = errno }
            if error != 0 {
                close(fd)
                return .failure(Self.connectFailure(error))
            }
        }
        return .success(fd)
    }

    static func connectFailure(_ error: Int32) -> Failure {
        switch error {
        case ECONNREFUSED: Failure(phrase: "connection refused")
        case ENETUNREACH, EHOSTUNREACH: Failure(phrase: "host unreachable")
        case ETIMEDOUT: Failure(phrase: "connection timed out")
        default: Failure(phrase: "connection failed: \(errorText(error))")
        }
    }

    /// Waits for `events` on `fd` until `deadline` (monotonic nanoseconds); false when the
    /// time ran out first. Wraps poll(2), retrying EINTR; POLLERR and POLLHUP count as ready
    /// (the next call on the socket says what happened).
    static func wait(_ fd: Int32, for events: Int16, until deadline: Int64) -> Bool {
        while true {
            let left = deadline - MonotonicClock.nanoseconds()
            if left <= 0 { return false }
            var watched = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&watched, 1, Int32(clamping: (left + 999_999) / 1_000_000))
            if ready > 0 { return true }
            if ready < 0, errno != EINTR { return true }
        }
    }

    static func errorText(_ error: Int32) -> String {
        String(cString: strerror(error))
    }
}

// MARK: - The exchange

extension AttributedProbe {
    /// The request's bytes.
    static func request(_ parts: Parts) -> [UInt8] {
        Array("GET \(parts.target) HTTP/1.1\r\nHost: \(parts.authority)\r\nConnection: close\r\nUser-Agent: switchback-analyzer\r\nAccept: */*\r\n\r\n".utf8)
    }

    /// Writes the request and reads the answer, until the deadline.
    func exchange(_ fd: Int32, request: [UInt8], deadline: Int64) -> Outcome {
        let timeout = "no answer within \(timeoutMilliseconds) ms"
        let started = MonotonicClock.nanoseconds()
        var written = 0
        while written < request.count {
            let count = request.withUnsafeBytes { send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL)) }
            let error = errno
            if count > 0 {
                written += count
            } else if count < 0, error == EAGAIN || error == EWOULDBLOCK || error == EINTR {
                guard Self.wait(fd, for: Int16(POLLOUT), until: deadline) else { return Outcome(failure: timeout) }
            } else {
                return Outcome(failure: error == ECONNRESET || error == EPIPE ? "the connection was reset" : "the request could not be sent: \(Self.errorText(error))")
            }
        }

        var reader = HTTPAnswerReader()
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var progress = HTTPAnswerReader.Progress.needsMore
        while progress == .needsMore {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            let error = errno
            if count > 0 {
                progress = reader.consume(buffer[..<count])
            } else if count == 0 {
                progress = reader.finish()
            } else if error == EAGAIN || error == EWOULDBLOCK || error == EINTR {
                guard Self.wait(fd, for: Int16(POLLIN), until: deadline) else { progress = .failed(timeout); break }
            } else {
                progress = .failed(error == ECONNRESET ? "the connection was reset" : "the answer could not be read: \(Self.errorText(error))")
            }
        }
        let finished = MonotonicClock.nanoseconds()
        switch progress {
        case .complete:
            return Outcome(status: reader.status, latencyMilliseconds: Double(finished - started) / 1_000_000, body: reader.body)
        case .failed(let phrase):
            return Outcome(status: reader.status, body: reader.body, failure: phrase)
        case .needsMore:
            return Outcome(status: reader.status, body: reader.body, failure: timeout)
        }
    }
}
