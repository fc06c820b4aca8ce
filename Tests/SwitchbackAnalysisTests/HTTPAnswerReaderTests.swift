@testable import SwitchbackAnalysis
import Testing

/// The answer reader over bytes alone: every framing, fed whole and one byte at a time, and
/// what a hostile or broken server sends.
@Suite struct HTTPAnswerReaderTests {
    /// Feeds `text` in pieces of `piece` bytes, then the peer's close when `closes`.
    func read(_ text: String, piece: Int = .max, closes: Bool = true) -> (HTTPAnswerReader.Progress, HTTPAnswerReader) {
        read(Array(text.utf8), piece: piece, closes: closes)
    }

    func read(_ bytes: [UInt8], piece: Int = .max, closes: Bool = true) -> (HTTPAnswerReader.Progress, HTTPAnswerReader) {
        var reader = HTTPAnswerReader()
        var offset = 0
        while offset < bytes.count {
            let end = offset + Swift.min(piece, bytes.count - offset)
            let progress = reader.consume(bytes[offset..<end])
            offset = end
            if progress != .needsMore { return (progress, reader) }
        }
        return (closes ? reader.finish() : .needsMore, reader)
    }

    @Test func framings() {
        let answers: [(String, Int, String, Bool)] = [
            // (answer, status, body, complete before the close)
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, "hello", true),
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, and more", 200, "hello", true),
            ("HTTP/1.0 500 Internal Server Error\r\nServer: x\r\n\r\nuntil the close", 500, "until the close", false),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;name=v\r\nhello\r\n1\r\n!\r\n0\r\nTrailer: 1\r\n\r\n", 200, "hello!", true),
            ("HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", 200, "0123456789", true),
            ("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 204, "", true),
            ("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", 304, "", true),
            ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 200, "", true),
            ("HTTP/1.1 404\nContent-Length: 2\n\nno", 404, "no", true),
        ]
        for (answer, status, body, early) in answers {
            for piece in [1, 2, 7, Int.max] {
                let (progress, reader) = read(answer, piece: piece, closes: !early)
                #expect(progress == .complete, "\(answer.debugDescription) in pieces of \(piece)")
                #expect(reader.status == status && String(decoding: reader.body, as: UTF8.self) == body, "\(answer.debugDescription)")
            }
        }
    }

    @Test func failures() {
        let cases: [(String, String)] = [
            ("", "the server closed the connection without answering"),
            ("SSH-2.0-OpenSSH_9.2\r\n", "the answer does not read as HTTP"),
            ("HTTP/1.1 200 OK\r\n", "the answer does not read as HTTP"),
            ("HTTP/1.1 2000 OK\r\n\r\n", "the answer does not read as HTTP"),
            ("HTTP/1.1 OK\r\n\r\n", "the answer does not read as HTTP"),
            ("HTTP/2 200\r\n\r\n", "the answer does not read as HTTP"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", "the answer does not read as HTTP"),
            ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "the answer does not read as HTTP"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "the answer does not read as HTTP"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", "the answer ended before its body did"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", "the answer ended before its body did"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "the answer's chunked body does not read"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n", "the answer's chunked body does not read"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\n", "the answer's chunked body does not read"),
        ]
        for (answer, phrase) in cases {
            for piece in [1, Int.max] {
                #expect(read(answer, piece: piece).0 == .failed(phrase), "\(answer.debugDescription) in pieces of \(piece)")
            }
        }
    }

    @Test func hostileSizesAreBounded() {
        // Headers that never end: refused past 64 KiB, whatever follows.
        let endless = Array("HTTP/1.1 200 OK\r\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 200_000)
        for piece in [1000, Int.max] {
            let (progress, reader) = read(endless, piece: piece, closes: false)
            #expect(progress == .failed("the answer's headers exceed 64 KiB") && reader.status == nil)
        }
        // 64 KiB of headers exactly, blank line included, still read.
        let fits = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "b", count: HTTPAnswerReader.maxHeaderBytes - 24) + "\r\n\r\nok"
        #expect(read(fits).0 == .complete)
        // An endless chunk-size line, endless trailers.
        let line = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + String(repeating: "0", count: 5000)
        #expect(read(line, closes: false).0 == .failed("the answer's chunked body does not read"))
        let trailers = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + String(repeating: "T: x\r\n", count: 20_000)
        #expect(read(trailers, closes: false).0 == .failed("the answer's headers exceed 64 KiB"))
        // A body of 1 MiB: 64 KiB kept, all counted.
        let big = Array("HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n".utf8) + Array(repeating: UInt8(ascii: "z"), count: 1 << 20)
        let (progress, reader) = read(big, piece: 10_000, closes: false)
        #expect(progress == .complete && reader.body.count == 64 << 10 && reader.bodyBytes == 1 << 20)
    }
}
