import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real HTTP server on 127.0.0.1 (python3's ThreadingHTTPServer) that answers every GET with
/// one status and logs each request's arrival time: the fleet's view from the server side.
/// A POST (a hook's webhook) is logged whole, its headers and body, one JSON line per request
/// in `posts.log`, and answered with the same status. Killed by `stop()` (SIGKILL, as
/// LocalHTTPServer does).
final class RequestLogServer {
    let port: Int
    let logPath: String
    private let process: Process
    private let exited = DispatchSemaphore(value: 0)

    static let script = """
    import http.server, json, sys, time, threading
    status, log = int(sys.argv[1]), sys.argv[2]
    posts = log.rsplit("/", 1)[0] + "/posts.log"
    lock = threading.Lock()
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            with lock, open(log, "a") as f:
                f.write("%.6f %s\\n" % (time.time(), self.path))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock, open(posts, "a") as f:
                f.write(json.dumps({"time": time.time(), "path": self.path, "body": body.decode("utf-8", "replace"),
                                    "headers": {k.lower(): v for k, v in self.headers.items()}}) + "\\n")
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

    /// Every POST, in arrival order: its arrival time, path, body and headers (names in lower case).
    func posts() -> [(time: Double, path: String, body: String, headers: [String: String])] {
        let text = (try? String(contentsOfFile: (logPath as NSString).deletingLastPathComponent + "/posts.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let time = object["time"] as? Double, let path = object["path"] as? String, let body = object["body"] as? String,
                  let headers = object["headers"] as? [String: String] else { return nil }
            return (time, path, body, headers)
        }
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
