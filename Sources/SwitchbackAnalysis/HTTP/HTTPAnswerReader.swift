/// Reads one HTTP/1.x answer from the bytes of a connection as they arrive, with no I/O of its
/// own: the status line, the headers (at most 64 KiB; 1xx interim answers skipped), then a body
/// framed by Content-Length, by chunked transfer coding (decoded), or by the peer's close. It
/// keeps at most 64 KiB of body and counts the rest; a hostile server costs it no more memory
/// than that, whatever it sends.
///
///     var reader = HTTPAnswerReader()
///     switch reader.consume(bytes) { case .needsMore: ...; case .complete: ...; case .failed(let why): ... }
///     // at the peer's close:
///     reader.finish()
struct HTTPAnswerReader {
    /// Where the answer stands after some bytes or the peer's close.
    enum Progress: Equatable {
        /// Not complete yet: more bytes, or the peer's close, are needed.
        case needsMore
        /// The whole answer arrived: `status` and `body` are final.
        case complete
        /// The bytes are not an answer, or it ended too soon: a short phrase saying why.
        case failed(String)
    }

    /// The most header bytes read before giving up on an answer.
    static let maxHeaderBytes = 64 << 10
    /// The most body bytes kept; the rest is read and counted, not kept.
    static let maxBodyBytes = 64 << 10
    /// The longest chunk-size line (with its extensions) or trailer line accepted.
    static let maxChunkLineBytes = 4096

    /// The status, once a final (non-1xx) status line was read.
    private(set) var status: Int?
    /// The body (decoded from chunks), at most `maxBodyBytes` of it.
    private(set) var body: [UInt8] = []
    /// All body bytes received, kept or not.
    private(set) var bodyBytes = 0
    /// Whether any byte at all arrived.
    private(set) var receivedAnything = false

    private enum Framing: Equatable {
        case untilClose
        case length(remaining: Int)
        case chunkSize(line: [UInt8])
        case chunkData(remaining: Int)
        case chunkDataEnd(seen: Int)
        case trailers(line: [UInt8], total: Int)
    }

    private enum State: Equatable {
        case headers
        case body(Framing)
        case done(Progress)
    }

    private var state = State.headers
    private var headerBytes: [UInt8] = []

    /// Takes the next bytes of the connection and says where the answer stands. Bytes after a
    /// complete answer are ignored.
    mutating func consume(_ bytes: some Collection<UInt8>) -> Progress {
        if !bytes.isEmpty { receivedAnything = true }
        var rest = ArraySlice(bytes)
        while true {
            switch state {
            case .done(let progress):
                return progress
            case .headers:
                if rest.isEmpty { return .needsMore }
                // Up to 64 KiB and the 4 bytes of a blank line ending there; what follows the
                // blank line (body bytes, in the same read) goes back into `rest`.
                let searchedFrom = Swift.max(0, headerBytes.count - 3)
                let taken = rest.prefix(Self.maxHeaderBytes + 4 - headerBytes.count)
                headerBytes.append(contentsOf: taken)
                rest = rest.dropFirst(taken.count)
                if !headerBytes.starts(with: Array("HTTP/".utf8).prefix(headerBytes.count)) {
                    return end(.failed("the answer does not read as HTTP"))
                }
                guard let end = Self.endOfHeaders(headerBytes, from: searchedFrom) else {
                    if headerBytes.count > Self.maxHeaderBytes { return self.end(.failed("the answer's headers exceed 64 KiB")) }
                    return .needsMore
                }
                let block = headerBytes[..<end]
                rest = headerBytes[end...] + rest
                headerBytes = []
                guard let parsed = Self.parseHeaders(block) else { return self.end(.failed("the answer does not read as HTTP")) }
                if (100..<200).contains(parsed.status), parsed.status != 101 {
                    continue // an interim answer (103 Early Hints, say): the final one follows
                }
                status = parsed.status
                if parsed.status == 101 || parsed.status == 204 || parsed.status == 304 {
                    state = .done(.complete)
                } else if parsed.isChunked {
                    state = .body(.chunkSize(line: []))
                } else if let length = parsed.contentLength {
                    state = length == 0 ? .done(.complete) : .body(.length(remaining: length))
                } else {
                    state = .body(.untilClose)
                }
            case .body(let framing):
                let (next, used) = advance(framing, over: rest)
                rest = rest.dropFirst(used)
                state = next
                if case .body = next, rest.isEmpty { return .needsMore }
            }
        }
    }

    /// Says where the answer stands once the peer closed the connection: complete when its
    /// body is framed by the close, failed when it ended before its end.
    mutating func finish() -> Progress {
        switch state {
        case .done(let progress):
            return progress
        case .headers:
            return end(.failed(receivedAnything ? "the answer does not read as HTTP" : "the server closed the connection without answering"))
        case .body(.untilClose):
            return end(.complete)
        case .body:
            return end(.failed("the answer ended before its body did"))
        }
    }

    private mutating func end(_ progress: Progress) -> Progress {
        state = .done(progress)
        return progress
    }

    /// Keeps body bytes up to the limit and counts them all.
    private mutating func keep(_ bytes: ArraySlice<UInt8>) {
        bodyBytes += bytes.count
        let room = Self.maxBodyBytes - body.count
        if room > 0 { body.append(contentsOf: bytes.prefix(room)) }
    }

    /// One step of the body: the next state and how many of `bytes` it used.
    private mutating func advance(_ framing: Framing, over bytes: ArraySlice<UInt8>) -> (State, Int) {
        switch framing {
        case .untilClose:
            keep(bytes)
            return (.body(.untilClose), bytes.count)
        case .length(let remaining):
            let taken = bytes.prefix(remaining)
            keep(taken)
            return (taken.count == remaining ? .done(.complete) : .body(.length(remaining: remaining - taken.count)), taken.count)
        case .chunkSize(var line):
            guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else {
                line.append(contentsOf: bytes)
                return (line.count > Self.maxChunkLineBytes ? .done(.failed("the answer's chunked body does not read")) : .body(.chunkSize(line: line)), bytes.count)
            }
            line.append(contentsOf: bytes[..<newline])
            let used = newline + 1 - bytes.startIndex
            guard line.count <= Self.maxChunkLineBytes, let size = Self.chunkSize(line) else {
                return (.done(.failed("the answer's chunked body does not read")), used)
            }
            return (size == 0 ? .body(.trailers(line: [], total: 0)) : .body(.chunkData(remaining: size)), used)
        case .chunkData(let remaining):
            let taken = bytes.prefix(remaining)
            keep(taken)
            return (taken.count == remaining ? .body(.chunkDataEnd(seen: 0)) : .body(.chunkData(remaining: remaining - taken.count)), taken.count)
        case .chunkDataEnd(var seen):
            // CRLF after a chunk's data (a bare LF is accepted, as for every line here).
            var used = 0
            for byte in bytes {
                used += 1
                if byte == UInt8(ascii: "\n") { return (.body(.chunkSize(line: [])), used) }
                seen += 1
                if byte != UInt8(ascii: "\r") || seen > 1 { return (.done(.failed("the answer's chunked body does not read")), used) }
            }
            return (.body(.chunkDataEnd(seen: seen)), used)
        case .trailers(var line, var total):
            var used = 0
            for byte in bytes {
                used += 1
                total += 1
                if total > Self.maxHeaderBytes { return (.done(.failed("the answer's headers exceed 64 KiB")), used) }
                if byte == UInt8(ascii: "\n") {
                    if line.isEmpty || line == [UInt8(ascii: "\r")] { return (.done(.complete), used) }
                    line = []
                } else {
                    line.append(byte)
                    if line.count > Self.maxChunkLineBytes { return (.done(.failed("the answer's chunked body does not read")), used) }
                }
            }
            return (.body(.trailers(line: line, total: total)), used)
        }
    }

    /// The index just past the empty line that ends the headers (CRLF CRLF, or LF LF from a
    /// lax server), searching from `start`; nil when it has not arrived.
    static func endOfHeaders(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n") { return index + 2 }
                if index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "\r"), bytes[index + 2] == UInt8(ascii: "\n") { return index + 3 }
            }
            index += 1
        }
        return nil
    }

    /// What the headers say: the status, the Content-Length, and whether the body is chunked;
    /// nil when the status line is not `HTTP/1.x NNN ...` or the Content-Length does not read
    /// (two different ones, or not a number: a framing the answer cannot be trusted with).
    static func parseHeaders(_ block: ArraySlice<UInt8>) -> (status: Int, contentLength: Int?, isChunked: Bool)? {
        var lines = block.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let statusLine = lines.first else { return nil }
        let statusBytes = Array(statusLine)
        // "HTTP/1.1 200 OK": the version, one space, three digits, then a space or the end.
        guard statusBytes.count >= 12, statusBytes.starts(with: Array("HTTP/1.".utf8)),
              (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(statusBytes[7]), statusBytes[8] == UInt8(ascii: " "),
              statusBytes[9...11].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              statusBytes.count == 12 || statusBytes[12] == UInt8(ascii: " ") else { return nil }
        let status = statusBytes[9...11].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard status >= 100 else { return nil }
        var contentLength: Int?
        var isChunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = trimmed(line[(colon + 1)...])
            if name == "content-length" {
                guard !value.isEmpty, value.count <= 18, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
                let length = value.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
                if let earlier = contentLength, earlier != length { return nil }
                contentLength = length
            } else if name == "transfer-encoding" {
                // The last coding decides: chunked framing (RFC 9112 section 6.3).
                let codings = String(decoding: value, as: UTF8.self).lowercased().split(separator: ",")
                isChunked = codings.last.map { $0.trimmingSpaces == "chunked" } ?? false
            }
        }
        return (status, contentLength, isChunked)
    }

    /// A chunk-size line's size (hexadecimal, before any `;extension`), or nil.
    static func chunkSize(_ line: [UInt8]) -> Int? {
        var digits = trimmed(line[...])
        if let semicolon = digits.firstIndex(of: UInt8(ascii: ";")) { digits = trimmed(digits[..<semicolon]) }
        guard !digits.isEmpty, digits.count <= 15 else { return nil }
        var size = 0
        for digit in digits {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): size = size * 16 + Int(digit - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): size = size * 16 + Int(digit - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): size = size * 16 + Int(digit - UInt8(ascii: "A")) + 10
            default: return nil
            }
        }
        return size
    }

    /// `bytes` without spaces, tabs and a CR at either end.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let blank: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")]
        var slice = bytes
        while let first = slice.first, blank.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, blank.contains(last) { slice = slice.dropLast() }
        return slice
    }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var slice = self
        while slice.first == " " || slice.first == "\t" { slice = slice.dropFirst() }
        while slice.last == " " || slice.last == "\t" { slice = slice.dropLast() }
        return slice
    }
}
