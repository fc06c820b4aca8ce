/// `serve`'s command line, and the sample's test knobs from the environment.
///
/// - `--crash-after SECONDS`: crash that long after starting (after the good mark).
/// - `--http HOST:PORT`: also serve HTTP, on a socket it binds itself (`HOST` may be empty
///   for every address, or `[v6]`; `PORT` 0 picks a free one).
/// - `--inherited`: serve HTTP on the first listening socket the service manager passed
///   instead of binding one (`--http`'s address, if given, is then not bound).
/// - `SAMPLE_HANG_AT_START=<version>`: when it is this build's version, hang before listening
///   or marking anything good, with SIGTERM blocked (a hung start; SIGKILL ends it).
/// - `SAMPLE_STOP_WATCHDOG_AFTER_S=<seconds>`: stop the watchdog pings after that long.
/// - `SAMPLE_NO_GOOD_MARK=1`: never mark itself good (for readiness probes, which need no app code).
struct ServeOptions: Equatable {
    var crashAfter: Double?
    var http: HTTPServer.Source?
    var hangAtStartVersion: String?
    var stopWatchdogAfter: Double?
    var marksItselfGood = true

    static let usage = "serve [--crash-after SECONDS] [--http HOST:PORT] [--inherited]"

    /// A command line or knob that does not parse: one sentence for `Error: ...`.
    struct UsageError: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    /// Parses `arguments` (after `serve`) and the knobs `environment` gives.
    static func parse(_ arguments: [String], environment: (String) -> String?) -> Result<ServeOptions, UsageError> {
        var options = ServeOptions()
        var address: HTTPServer.Source?
        var isInherited = false
        var rest = arguments[...]
        while let option = rest.popFirst() {
            switch option {
            case "--crash-after":
                guard let value = rest.popFirst(), let seconds = Double(value), seconds >= 0 else {
                    return .failure(UsageError(description: "--crash-after wants a number of seconds; usage: \(usage)"))
                }
                options.crashAfter = seconds
            case "--http":
                guard let value = rest.popFirst(), let source = parseAddress(value) else {
                    return .failure(UsageError(description: "--http wants HOST:PORT, like 127.0.0.1:8080; usage: \(usage)"))
                }
                address = source
            case "--inherited":
                isInherited = true
            default:
                return .failure(UsageError(description: "usage: \(usage)"))
            }
        }
        options.http = isInherited ? .inherited : address
        options.hangAtStartVersion = environment("SAMPLE_HANG_AT_START")
        options.marksItselfGood = environment("SAMPLE_NO_GOOD_MARK") != "1"
        if let value = environment("SAMPLE_STOP_WATCHDOG_AFTER_S") {
            guard let seconds = Double(value), seconds >= 0 else {
                return .failure(UsageError(description: "SAMPLE_STOP_WATCHDOG_AFTER_S wants a number of seconds, not '\(value)'."))
            }
            options.stopWatchdogAfter = seconds
        }
        return .success(options)
    }

    /// `HOST:PORT`, `:PORT` or `[V6]:PORT`.
    static func parseAddress(_ text: String) -> HTTPServer.Source? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        let port = text[text.index(after: colon)...]
        guard !port.isEmpty, port.allSatisfy({ $0 >= "0" && $0 <= "9" }), let number = UInt16(port) else { return nil }
        if host.hasPrefix("[") && host.hasSuffix("]") && host.count >= 2 {
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            return nil
        }
        return .address(host: host, port: number)
    }
}
