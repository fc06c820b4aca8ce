#if canImport(Glibc)
import Glibc
#endif

// The one URL shape a probe takes: http://HOST[:PORT][/PATH][?QUERY], checked once, at `init`.
extension AttributedProbe {
    /// The parts of `http://HOST[:PORT][/PATH][?QUERY][#FRAGMENT]`, or nil.
    static func parse(_ url: String) -> Parts? {
        let bytes = Array(url.utf8)
        // Printable ASCII only: nothing that could end a request line or a header early.
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        let scheme = Array("http://".utf8)
        guard bytes.count > scheme.count, bytes.prefix(scheme.count).map({ $0 | 0x20 }) == scheme.map({ $0 | 0x20 }) else { return nil }
        var rest = bytes[scheme.count...]
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(decoding: rest[authorityEnd...], as: UTF8.self)
        if !target.hasPrefix("/") { target = "/" + target }
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }

        var hostText: Substring
        var portText: Substring?
        let authorityText = String(decoding: authority, as: UTF8.self)[...]
        if authorityText.hasPrefix("[") {
            guard let close = authorityText.firstIndex(of: "]") else { return nil }
            hostText = authorityText[authorityText.index(after: authorityText.startIndex)..<close]
            let after = authorityText[authorityText.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else {
            let parts = authorityText.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            hostText = parts[0]
            portText = parts.count > 1 ? parts[1] : nil
            guard !hostText.contains(":") else { return nil }
        }
        var port: UInt16 = 80
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let value = Int(portText), (1...65535).contains(value) else { return nil }
            port = UInt16(value)
        }
        guard !hostText.isEmpty else { return nil }

        let host: Host
        if authorityText.hasPrefix("[") {
            guard let bytes = presentation(String(hostText), family: AF_INET6) else { return nil }
            host = .address(family: AF_INET6, bytes: bytes)
        } else if let bytes = presentation(String(hostText), family: AF_INET) {
            host = .address(family: AF_INET, bytes: bytes)
        } else if hostText.lowercased() == "localhost" {
            host = .localhost
        } else {
            guard hostText.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }) else { return nil }
            host = .name(String(hostText))
        }
        return Parts(host: host, port: port, authority: String(authorityText), target: target)
    }

    /// Wraps inet_pton(3): the address's bytes in network order, or nil.
    static func presentation(_ text: String, family: Int32) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard bytes.withUnsafeMutableBytes({ inet_pton(family, text, $0.baseAddress) }) == 1 else { return nil }
        return Array(bytes.prefix(family == AF_INET ? 4 : 16))
    }
}
