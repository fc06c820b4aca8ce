import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real Prometheus server (`/usr/bin/prometheus`, Debian's package) for a test: a temporary
/// configuration scraping `scrapeTargets` (`HOST:PORT` of /metrics endpoints) every
/// `scrapeIntervalSeconds`, its TSDB in a temporary directory, listening on a free loopback
/// port. `start` returns once `/-/ready` answers 200; `stop` kills it and removes the directory.
///
///     let exporter = try NodeExporter.start(textfileDirectory: dir)
///     let prometheus = try PrometheusServer.start(scrapeTargets: [exporter.address], scrapeIntervalSeconds: 1)
///     defer { prometheus.stop(); exporter.stop() }
///     prometheus.address  // "http://127.0.0.1:PORT"
public final class PrometheusServer: @unchecked Sendable {
    /// The base URL: `http://127.0.0.1:PORT`.
    public let address: String
    /// The port it listens on.
    public let port: Int
    /// The temporary directory (configuration, TSDB, `prometheus.log`).
    public let directory: String
    private let process: Process

    private init(address: String, port: Int, directory: String, process: Process) {
        self.address = address
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Starts Prometheus scraping `scrapeTargets` (job `test`); throws when it is not ready
    /// within 60 s (its log is in the message).
    public static func start(scrapeTargets: [String], scrapeIntervalSeconds: Double = 1) throws -> PrometheusServer {
        let directory = try makeTemporaryDirectory("switchback-test-prometheus")
        let interval = "\(Int((scrapeIntervalSeconds * 1000).rounded()))ms"
        let targets = scrapeTargets.map { "'\($0)'" }.joined(separator: ", ")
        let config = """
            global:
              scrape_interval: \(interval)
              evaluation_interval: \(interval)
            scrape_configs:
              - job_name: test
                scrape_interval: \(interval)
                scrape_timeout: \(interval)
                static_configs:
                  - targets: [\(targets)]

            """
        try config.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        var lastError = ""
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            let process = try launch("/usr/bin/prometheus", [
                "--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
                "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
            ], log: directory + "/prometheus.log")
            let server = PrometheusServer(address: "http://127.0.0.1:\(port)", port: port, directory: directory, process: process)
            if waitFor(seconds: 60, { process.isRunning && loopbackGet(port: port, path: "/-/ready")?.status == 200 }) {
                return server
            }
            lastError = (try? String(contentsOfFile: directory + "/prometheus.log", encoding: .utf8)) ?? ""
            server.terminate()
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw TestSupportFailure("Prometheus did not become ready: \(lastError.suffix(2000))")
    }

    /// The raw JSON of an instant query, or nil when Prometheus did not answer.
    public func query(_ promql: String) -> String? {
        loopbackGet(port: port, path: "/api/v1/query?query=" + percentEncode(promql)).map { $0.body }
    }

    /// Waits until `promql` returns at least one sample (e.g. once the targets were scraped).
    public func waitForSamples(of promql: String, seconds: Double = 30) -> Bool {
        waitFor(seconds: seconds) { query(promql)?.contains("\"value\":[") == true }
    }

    /// Kills Prometheus and removes its directory.
    public func stop() {
        terminate()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func terminate() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// A real node_exporter (`/usr/bin/prometheus-node-exporter`) with only its textfile
/// collector, over `textfileDirectory`, on a free loopback port: what Switchback's `.prom`
/// files go through to reach Prometheus.
public final class NodeExporter: @unchecked Sendable {
    /// The scrape target: `127.0.0.1:PORT`.
    public let address: String
    public let port: Int
    private let process: Process
    private let log: String

    private init(address: String, port: Int, process: Process, log: String) {
        self.address = address
        self.port = port
        self.process = process
        self.log = log
    }

    /// Starts it; returns once /metrics answers 200.
    public static func start(textfileDirectory: String) throws -> NodeExporter {
        let log = try makeTemporaryDirectory("switchback-test-node-exporter") + "/node-exporter.log"
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            let process = try launch("/usr/bin/prometheus-node-exporter", [
                "--web.listen-address=127.0.0.1:\(port)", "--collector.textfile.directory=\(textfileDirectory)",
                "--collector.disable-defaults", "--collector.textfile",
            ], log: log)
            let exporter = NodeExporter(address: "127.0.0.1:\(port)", port: port, process: process, log: log)
            if waitFor(seconds: 30, { process.isRunning && loopbackGet(port: port, path: "/metrics")?.status == 200 }) {
                return exporter
            }
            exporter.terminate()
        }
        throw TestSupportFailure("node_exporter did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// Its /metrics text, or nil.
    public func scrape() -> String? { loopbackGet(port: port, path: "/metrics")?.body }

    /// Kills it and removes its log's directory.
    public func stop() {
        terminate()
        try? FileManager.default.removeItem(atPath: (log as NSString).deletingLastPathComponent)
    }

    private func terminate() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// A failure of a test helper, with what went wrong.
public struct TestSupportFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A port on 127.0.0.1 nothing listens on right now (bound to port 0, read, closed).
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportFailure("socket failed: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw TestSupportFailure("bind failed: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// One HTTP/1.0 GET of `path` on 127.0.0.1:`port` over a plain socket (5 s timeouts): the
/// status and body, or nil when nothing answered.
public func loopbackGet(port: Int, path: String) -> (status: Int, body: String)? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else { return nil }
    let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return nil }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        response.append(contentsOf: buffer[0..<count])
    }
    let text = String(decoding: response, as: UTF8.self)
    guard text.hasPrefix("HTTP/"), let space = text.firstIndex(of: " ") else { return nil }
    let status = Int(text[text.index(after: space)...].prefix(3)) ?? 0
    let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
    return (status, body)
}

/// `text` with everything but RFC 3986's unreserved characters percent-encoded.
func percentEncode(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")) ?? text
}

func makeTemporaryDirectory(_ prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw TestSupportFailure("mkdtemp failed: errno \(errno)") }
    return String(cString: made)
}

func launch(_ executable: String, _ arguments: [String], log: String) throws -> Process {
    FileManager.default.createFile(atPath: log, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle(forWritingAtPath: log)
    try process.run()
    return process
}

func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(100_000)
    }
    return condition()
}
