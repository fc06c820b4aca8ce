import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's real Prometheus server (`/usr/bin/prometheus`) on a free loopback port, scraping
/// `targets` (`127.0.0.1:PORT`, their `/metrics`) every second, with its data in a directory
/// of the test's own: what an operator's Prometheus is to a bake window's `kind=prometheus`
/// check. Killed (SIGKILL) by `stop()` or when released.
final class ScrapingPrometheus {
    static let executable = "/usr/bin/prometheus"

    let port: Int
    let directory: String
    private let process: SpawnedProcess

    var address: String { "http://127.0.0.1:\(port)" }
    var log: String { (try? String(contentsOfFile: directory + "/prometheus.log", encoding: .utf8)) ?? "" }

    /// Starts it and waits until `/-/ready` answers 200 (throws with its log when it does not
    /// within 30 s). `directory` must exist; the config and the data go into it.
    init(scraping targets: [String], in directory: String) throws {
        self.directory = directory
        port = try unusedLocalPort()
        try Self.configuration(scraping: targets).write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        process = try SpawnedProcess(Self.executable, [
            "--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/prometheus-data",
            "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
        ], environment: ["PATH": "/usr/bin:/bin"], stderr: directory + "/prometheus.log")
        let port = port
        guard waitUntil(seconds: 30, { HTTPPoller.request(port: port, path: "/-/ready", timeout: .seconds(2)).isOK }) else {
            stop()
            throw TestFailure("Prometheus did not get ready on port \(port): \(log)")
        }
    }

    /// The configuration: one job, `sample`, scraping every target's `/metrics` each second.
    static func configuration(scraping targets: [String]) -> String {
        """
        global:
          scrape_interval: 1s
          scrape_timeout: 900ms
          evaluation_interval: 1s
        scrape_configs:
          - job_name: sample
            static_configs:
              - targets: [\(targets.map { "'\($0)'" }.joined(separator: ", "))]

        """
    }

    /// The body of an instant query's answer (`/api/v1/query`), or nil when it failed.
    func query(_ promql: String) -> String? {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = promql.addingPercentEncoding(withAllowedCharacters: allowed) ?? promql
        if case .ok(let body) = HTTPPoller.request(port: port, path: "/api/v1/query?query=\(encoded)", timeout: .seconds(5)) { return body }
        return nil
    }

    func stop() {
        if !process.hasExited { kill(process.pid, SIGKILL) }
        process.wait()
    }

    deinit { stop() }
}
