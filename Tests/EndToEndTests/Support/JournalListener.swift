import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A unix datagram socket bound where `SWITCHBACK_JOURNAL_SOCKET` points: it receives what
/// journald would, in journald's native protocol, and parses each datagram into its fields.
final class JournalListener {
    let path: String
    private let fd: Int32

    init(directory: String) throws {
        path = directory + "/journal.socket"
        fd = try NotifyListener.bindDatagramSocket(at: path)
    }

    deinit {
        close(fd)
        unlink(path)
    }

    var environment: [String: String] { ["SWITCHBACK_JOURNAL_SOCKET": path] }

    /// Every datagram that arrives within `seconds` (stops early once `count` arrived).
    func receive(count: Int = 1, within seconds: Double = 10) -> [[String: String]] {
        var entries: [[String: String]] = []
        let deadline = Date().addingTimeInterval(seconds)
        while entries.count < count, Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let got = recv(fd, &buffer, buffer.count, 0)
            if got > 0 { entries.append(Self.parse(Array(buffer.prefix(got)))) }
        }
        return entries
    }

    /// The fields of one native-protocol datagram (`KEY=VALUE` lines, or the binary form).
    static func parse(_ bytes: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        var index = 0
        while index < bytes.count {
            guard let newline = bytes[index...].firstIndex(of: 0x0A) else { break }
            let line = bytes[index..<newline]
            if let equals = line.firstIndex(of: 0x3D) {
                fields[String(decoding: line[..<equals], as: UTF8.self)] = String(decoding: line[(equals + 1)...], as: UTF8.self)
                index = newline + 1
            } else {
                let start = newline + 1 + 8
                let length = bytes[(newline + 1)..<start].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
                fields[String(decoding: line, as: UTF8.self)] = String(decoding: bytes[start..<(start + length)], as: UTF8.self)
                index = start + length + 1
            }
        }
        return fields
    }
}
