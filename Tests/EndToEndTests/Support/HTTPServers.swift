import Foundation
import SwitchbackTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real HTTP server on 127.0.0.1 in a python3 child process: `python3 -m http.server` over a
/// directory (a static host, as nginx or a CDN would be), or the hostile test server of
/// Tests/SwitchbackRemoteTests/Fixtures. Killed by `stop()` (SIGKILL: a child started from a
/// test thread may have SIGTERM blocked).
final class LocalHTTPServer {
    let port: Int
    private let process: Process
    private let exited: DispatchSemaphore

    private init(process: Process, port: Int, exited: DispatchSemaphore) {
        self.process = process
        self.port = port
        self.exited = exited
    }

    deinit { stop() }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        exited.wait()  // not waitUntilExit(), which spins
    }

    /// `python3 -m http.server` serving `root` (Last-Modified and If-Modified-Since → 304).
    static func staticFiles(root: String) throws -> LocalHTTPServer {
        // "Serving HTTP on 127.0.0.1 port 36903 (http://127.0.0.1:36903/) ..."
        try start(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root]) { line in
            guard let range = line.range(of: " port ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
    }

    /// The hostile server (see hostile_server.py), serving `root` under /files/ with ETags.
    static func hostile(root: String) throws -> LocalHTTPServer {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("SwitchbackRemoteTests/Fixtures/hostile_server.py").path
        return try start(["-u", script, "--lifetime", "120", "--root", root]) { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    private static func start(_ arguments: [String], port parse: (String) -> Int?) throws -> LocalHTTPServer {
        let (process, output) = pythonServerProcess(arguments)
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let watchdog = DispatchSource.makeTimerSource()
        watchdog.schedule(deadline: .now() + 15)
        watchdog.setEventHandler { kill(process.processIdentifier, SIGKILL) }
        watchdog.resume()
        defer { watchdog.cancel() }
        var buffer = Data()
        while !buffer.contains(0x0A) {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            buffer.append(data)
        }
        let line = String(decoding: buffer.prefix { $0 != 0x0A }, as: UTF8.self)
        guard let port = parse(line) else {
            kill(process.processIdentifier, SIGKILL)
            throw TestFailure("python3 \(arguments.joined(separator: " ")) did not report a port: \(line)")
        }
        return LocalHTTPServer(process: process, port: port, exited: exited)
    }
}

/// A port on 127.0.0.1 that nothing listens on (bound, then closed).
func unusedLocalPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw TestFailure("bind failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Polls `condition` every 50 ms until it holds or `seconds` pass; returns whether it held.
func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(50_000)
    }
    return try condition()
}
