import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A real nginx (Debian's `/usr/sbin/nginx`, installed by scripts/test through
/// scripts/lib/ensure-packages) serving `root` on 127.0.0.1 at a free port, with its own
/// configuration, pid file, error log and temporary paths in a private directory: never port
/// 80, never the system's configuration. One process (`master_process off`, `daemon off`),
/// killed with its process group by `stop()` or `deinit`.
///
/// nginx serves static files the way a fleet's directive host does: `ETag` is
/// `"<mtime hex>-<size hex>"`, `Last-Modified` the file's mtime, 304 on a match.
final class NginxServer {
    static let executable = "/usr/sbin/nginx"

    let port: Int
    let directory: String
    private let process: SpawnedProcess

    /// Starts nginx over `root` and waits (up to 20 s) until it accepts connections. Throws,
    /// saying how to install it, when nginx is missing: tests that need it fail, never skip.
    /// With `logRequests`, nginx logs each request's arrival (`$msec $status`) for
    /// `requestTimes()`.
    init(root: String, logRequests: Bool = false) throws {
        guard access(Self.executable, X_OK) == 0 else {
            throw TestFailure("\(Self.executable) is missing: install Debian's nginx package (scripts/test does it with scripts/lib/ensure-packages nginx:/usr/sbin/nginx).")
        }
        directory = try makeTemporaryDirectory()
        var lastFailure = ""
        // A free port can be taken between our probe and nginx's bind: try a few.
        for _ in 0..<5 {
            let port = try unusedLocalPort()
            try Self.configuration(directory: directory, root: root, port: port, logRequests: logRequests)
                .write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
            let process = try SpawnedProcess(Self.executable, ["-p", directory + "/", "-c", directory + "/nginx.conf", "-g", "daemon off;"],
                                             environment: ["PATH": "/usr/sbin:/usr/bin:/bin"], stdout: directory + "/stdout.log",
                                             stderr: directory + "/stderr.log", ownProcessGroup: true)
            let up = waitUntil(seconds: 20) { process.hasExited || Self.accepts(port: port) }
            if up && !process.hasExited {
                self.port = port
                self.process = process
                return
            }
            kill(-process.pid, SIGKILL)
            process.wait()
            lastFailure = ((try? String(contentsOfFile: directory + "/stderr.log", encoding: .utf8)) ?? "")
                + ((try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "")
        }
        throw TestFailure("nginx did not start on 127.0.0.1: \(lastFailure)")
    }

    deinit { stop() }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// When each logged request arrived (seconds since the epoch, sorted).
    func requestTimes() -> [Double] {
        let text = (try? String(contentsOfFile: directory + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { Double($0.split(separator: " ").first ?? "") }.sorted()
    }

    /// Kills nginx (and anything in its process group) and reaps it.
    func stop() {
        guard !process.hasExited else { return }
        kill(-process.pid, SIGKILL)
        process.wait()
    }

    /// The configuration: loopback only, logs and temporary files in `directory`.
    static func configuration(directory: String, root: String, port: Int, logRequests: Bool = false) -> String {
        """
        # Written by the tests (Tests/EndToEndTests/Support/NginxServer.swift).
        user root;
        master_process off;
        worker_processes 1;
        error_log \(directory)/error.log warn;
        pid \(directory)/nginx.pid;
        events { worker_connections 256; }
        http {
            log_format arrival '$msec $status';
            access_log \(logRequests ? "\(directory)/access.log arrival" : "off");
            client_body_temp_path \(directory)/client_body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;
            types { application/json json; }
            default_type application/octet-stream;
            server {
                listen 127.0.0.1:\(port);
                root \(root);
            }
        }

        """
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
