import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real HTTP server on 127.0.0.1 (python3's ThreadingHTTPServer) that answers every GET with
/// one status and logs each request's arrival time: the fleet's view from the server side.
/// Killed by `stop()` (SIGKILL, as LocalHTTPServer does).
final class RequestLogServer {
    let port: Int
    let logPath: String
    private let process: Process
    private let exited = DispatchSemaphore(value: 0)

    static let script = """
    import http.server, sys, time, threading
    status, log = int(sys.argv[1]), sys.argv[2]
    lock = threading.Lock()
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            with lock, open(log, "a") as f:
                f.write("%.6f %s\\n" % (time.time(), self.path))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
        def log_message(self, *args):
            pass
    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 256
    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """

    /// Starts the server in `directory`; every request gets `status` and an empty body.
    init(status: Int, directory: String) throws {
        let scriptPath = directory + "/request-log-server.py"
        logPath = directory + "/requests.log"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: logPath, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-u", scriptPath, String(status), logPath]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        var buffer = Data()
        while !buffer.contains(0x0A) {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            buffer.append(data)
        }
        guard let port = Int(String(decoding: buffer.prefix { $0 != 0x0A }, as: UTF8.self)) else {
            kill(process.processIdentifier, SIGKILL)
            throw TestFailure("the request-log server did not report a port")
        }
        self.port = port
    }

    deinit { stop() }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Every request's arrival time (seconds since the epoch), in order.
    func requestTimes() -> [Double] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { Double($0.split(separator: " ").first ?? "") }.sorted()
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        exited.wait()
    }
}

/// The most of `times` (sorted seconds) inside any window of `width` seconds.
func busiestWindow(_ times: [Double], width: Double) -> Int {
    var best = 0
    var start = 0
    for end in times.indices {
        while times[end] - times[start] >= width { start += 1 }
        best = max(best, end - start + 1)
    }
    return best
}
