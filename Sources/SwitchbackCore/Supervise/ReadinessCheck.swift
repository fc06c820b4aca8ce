/// How the supervisor knows a child is ready (`supervise.ready`). The app's good mark, or
/// `READY=1` on the child's NOTIFY_SOCKET, always counts; a probe is a second way that needs
/// no app code:
/// - `mark` (the default): only the good mark or READY=1;
/// - `tcp:HOST:PORT`: a TCP connect succeeds;
/// - `http://HOST:PORT/PATH`: a GET answers 2xx (loopback addresses only);
/// - `command:COMMAND`: `/bin/sh -c COMMAND` exits 0 (with SWITCHBACK_CHILD_PID set).
public enum ReadinessCheck: Sendable, Equatable, CustomStringConvertible {
    case mark
    case tcp(ListenAddress)
    case http(ListenAddress, path: String)
    case command(String)

    public init?(_ text: String) {
        if text.isEmpty || text == "mark" {
            self = .mark
        } else if text.hasPrefix("tcp:"), let address = ListenAddress(text.dropFirst(4)), !text.contains("=") {
            self = .tcp(address)
        } else if text.hasPrefix("http://") {
            let rest = text.dropFirst(7)
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let path = rest[slash...].isEmpty ? "/" : String(rest[slash...])
            guard let address = ListenAddress(rest[..<slash]), !rest[..<slash].contains("="), address.isLoopback,
                  path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), path.utf8.count <= 1024 else { return nil }
            self = .http(address, path: path)
        } else if text.hasPrefix("command:"), text.count > 8, !text.utf8.contains(0) {
            self = .command(String(text.dropFirst(8)))
        } else {
            return nil
        }
    }

    /// The address a probe connects to, if any.
    var address: ListenAddress? {
        switch self {
        case .tcp(let address), .http(let address, _): return address
        case .mark, .command: return nil
        }
    }

    public var description: String {
        switch self {
        case .mark: return "the good mark"
        case .tcp(let address): return "a TCP connect to \(address)"
        case .http(let address, let path): return "an HTTP GET of http://\(address)\(path)"
        case .command(let command): return "the command '\(command)'"
        }
    }
}

extension ListenAddress {
    /// 127.0.0.0/8 or ::1.
    var isLoopback: Bool { isIPv6 ? host == [UInt8](repeating: 0, count: 15) + [1] : host[0] == 127 }
}
