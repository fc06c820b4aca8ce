import Foundation
import SwitchbackTestSupport

/// A real HTTP server on 127.0.0.1 in a child process: the hostile test server, or
/// python3's own `http.server` serving a directory. Stopped (SIGTERM, then reaped) by `stop()`.
final class TestServer: @unchecked Sendable {
    let port: Int
    private let process: Process

    private init(process: Process, port: Int) {
        self.process = process
        self.port = port
    }

    /// The URL of `path` on this server, e.g. `url("/hang")`.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// Stops the server with SIGKILL and waits (asynchronously, at most 5 s) until it is reaped.
    ///
    /// Not SIGTERM: a child started by Foundation's `Process` from a Swift concurrency thread
    /// inherits that thread's blocked signal mask, so SIGTERM stays pending forever. And not
    /// `waitUntilExit()`: it spins a run loop on the calling thread, and on a 2-core machine
    /// two such waits occupy the whole cooperative pool and starve every other test.
    func stop() async {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The hostile server (`Fixtures/hostile_server.py`), serving `root` under `/files/`.
    static func hostile(root: URL? = nil) async throws -> TestServer {
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/hostile_server.py")
        var arguments = ["-u", script.path, "--lifetime", "120"]
        if let root { arguments += ["--root", root.path] }
        return try await start(arguments: arguments) { line in Int(line.trimmingCharacters(in: .whitespaces)) }
    }

    /// `python3 -m http.server` serving `root`, as any static host would.
    static func staticFiles(root: URL) async throws -> TestServer {
        let arguments = ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root.path]
        // "Serving HTTP on 127.0.0.1 port 36903 (http://127.0.0.1:36903/) ..."
        return try await start(arguments: arguments) { line in
            guard let range = line.range(of: " port ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
    }

    private static func start(arguments: [String], port parse: @escaping @Sendable (String) -> Int?) async throws -> TestServer {
        let (process, output) = pythonServerProcess(arguments)
        let lines = LineCollector()
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
            } else {
                lines.append(data)
            }
        }
        try process.run()
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if let line = lines.firstLine, let port = parse(line) {
                return TestServer(process: process, port: port)
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Once more after the deadline: on a loaded machine the sleep can outlast it while the
        // port is already there (the line was in the failure message).
        if let line = lines.firstLine, let port = parse(line) { return TestServer(process: process, port: port) }
        kill(process.processIdentifier, SIGKILL)
        throw TestServerError(message: "python3 \(arguments.joined(separator: " ")) did not report a port; output: \(lines.firstLine ?? "<none>")")
    }
}

/// A failure to start a test server.
struct TestServerError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Collects a child's stdout until the first newline.
private final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = Data()

    func append(_ data: Data) {
        lock.withLock { buffer.append(data) }
    }

    var firstLine: String? {
        lock.withLock {
            guard let newline = buffer.firstIndex(of: 0x0A) else { return nil }
            return String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
        }
    }
}

/// Runs `body` with a hostile server that is stopped afterwards, whatever happens.
func withHostileServer<T>(root: URL? = nil, _ body: (TestServer) async throws -> T) async throws -> T {
    try await withServer(TestServer.hostile(root: root), body)
}

/// Runs `body` with `python3 -m http.server` over `root`, stopped afterwards.
func withStaticServer<T>(root: URL, _ body: (TestServer) async throws -> T) async throws -> T {
    try await withServer(TestServer.staticFiles(root: root), body)
}

private func withServer<T>(_ server: TestServer, _ body: (TestServer) async throws -> T) async throws -> T {
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
