import Foundation
import SwitchbackAnalysis
import SwitchbackCore
import SwitchbackTestSupport
import Testing

/// Instant queries against a real Prometheus scraping a real node_exporter's textfile
/// collector: what passes, what fails, and every unusable answer as an error measurement.
@Suite struct PrometheusClientTests {
    /// One Prometheus for the whole suite's real queries: it takes seconds to start and scrape.
    @Test func queriesAgainstARealPrometheus() throws {
        let fixture = try PrometheusFixture()
        defer { fixture.stop() }
        let queries = Queries(prometheus: fixture.prometheus, exporter: fixture.exporter)
        try queries.aValueThatPasses()
        try queries.aValueThatFails()
        try queries.aScalarIsAResult()
        try queries.notANumberAndInfinityAreValues()
        try queries.anEmptyVectorIsAnError()
        try queries.aMatrixIsAnError()
        try queries.aStringIsAnError()
        try queries.aMalformedQueryIsAnErrorWithPrometheussMessage()
        try queries.somethingThatIsNotPrometheusIsAnError()
        try queries.anAnswerOverTheLimitIsAnError()
    }

    @Test func aPortNothingListensOnIsAnErrorNeverAPass() throws {
        let port = try freeLoopbackPort()
        // Only a failure condition: a result would pass; no result is an error.
        let check = AnalysisCheck.Prometheus(address: "http://127.0.0.1:\(port)", query: "up", success: nil,
                                             failure: try AnalysisCondition(parsing: "result[0] > 1"))
        let measurement = PrometheusClient(address: check.address).measure(check, name: "errors", variables: [:], at: nowMilliseconds())
        #expect(measurement == Measurement(check: "errors", phase: .error,
                                           detail: "Prometheus at http://127.0.0.1:\(port) could not be reached (connection refused)"))
    }

    @Test func theQueryIsEncoded() {
        let client = PrometheusClient(address: "http://127.0.0.1:9090/")
        #expect(client.url(of: "sum(rate(x{code=~\"5..\"}[30s])) / 2", at: 1_795_317_164_005)
            == "http://127.0.0.1:9090/api/v1/query?query=sum%28rate%28x%7Bcode%3D~%225..%22%7D%5B30s%5D%29%29%20%2F%202&time=1795317164.005")
    }
}

/// A node_exporter whose textfile collector serves sample metrics, and a Prometheus scraping it.
final class PrometheusFixture {
    let textfiles: String
    let exporter: NodeExporter
    let prometheus: PrometheusServer

    init() throws {
        textfiles = try temporaryDirectory()
        try """
            # TYPE sample_error_ratio gauge
            sample_error_ratio{version="1.2.0"} 0.01
            sample_error_ratio{version="1.3.0"} 0.31
            # TYPE sample_odd gauge
            sample_odd{kind="nan"} NaN
            sample_odd{kind="inf"} +Inf

            """.write(toFile: textfiles + "/sample.prom", atomically: true, encoding: .utf8)
        exporter = try NodeExporter.start(textfileDirectory: textfiles)
        prometheus = try PrometheusServer.start(scrapeTargets: [exporter.address], scrapeIntervalSeconds: 1)
        guard prometheus.waitForSamples(of: "sample_error_ratio") && prometheus.waitForSamples(of: "sample_odd") else {
            prometheus.stop()
            exporter.stop()
            throw TestSupportFailure("Prometheus never scraped the textfile collector")
        }
    }

    func stop() {
        prometheus.stop()
        exporter.stop()
        try? FileManager.default.removeItem(atPath: textfiles)
    }
}

struct Queries {
    let prometheus: PrometheusServer
    let exporter: NodeExporter

    func check(_ query: String, success: String? = "result[0] < 0.05", failure: String? = nil) throws -> AnalysisCheck.Prometheus {
        AnalysisCheck.Prometheus(address: prometheus.address, query: query,
                                 success: try success.map { try AnalysisCondition(parsing: $0) },
                                 failure: try failure.map { try AnalysisCondition(parsing: $0) })
    }

    func measure(_ check: AnalysisCheck.Prometheus, version: String = "1.2.0", address: String? = nil) -> Measurement {
        PrometheusClient(address: address ?? prometheus.address, timeoutMilliseconds: 5000)
            .measure(check, name: "errors", variables: ["version": version], at: nowMilliseconds())
    }

    func aValueThatPasses() throws {
        let measurement = measure(try check("sample_error_ratio{version=\"$version\"}"), version: "1.2.0")
        #expect(measurement == Measurement(check: "errors", phase: .successful, detail: "result[0] < 0.05 is true (0.01)"))
    }

    func aValueThatFails() throws {
        let measurement = measure(try check("sample_error_ratio{version=\"$version\"}"), version: "1.3.0")
        #expect(measurement.phase == .failed)
        #expect(measurement.sentence == "errors: result[0] < 0.05 is false (0.31)")
        let both = measure(try check("sample_error_ratio{version=\"$version\"}", failure: "result[0] >= 0.05"), version: "1.3.0")
        #expect(both.sentence == "errors: result[0] >= 0.05 is true (0.31)")
    }

    func aScalarIsAResult() throws {
        let client = PrometheusClient(address: prometheus.address)
        #expect(client.query("scalar(sample_error_ratio{version=\"1.3.0\"})", at: nowMilliseconds()) == .samples([0.31]))
        #expect(client.query("sample_error_ratio", at: nowMilliseconds()).samplesCount == 2)
    }

    func notANumberAndInfinityAreValues() throws {
        let nan = measure(try check("sample_odd{kind=\"nan\"}", success: "result[0] < 1"))
        #expect(nan == Measurement(check: "errors", phase: .failed, detail: "result[0] < 1 is false (NaN)"))
        let guarded = measure(try check("sample_odd{kind=\"nan\"}", success: "isNaN(result[0])"))
        #expect(guarded.phase == .successful)
        let infinite = measure(try check("sample_odd{kind=\"inf\"}", success: "result[0] > 1000"))
        #expect(infinite.detail == "result[0] > 1000 is true (+Inf)")
    }

    func anEmptyVectorIsAnError() throws {
        let measurement = measure(try check("sample_error_ratio{version=\"$version\"}"), version: "9.9.9")
        #expect(measurement == Measurement(check: "errors", phase: .error, detail: "the query returned no samples"))
    }

    func aMatrixIsAnError() throws {
        let measurement = measure(try check("sample_error_ratio[1m]"))
        #expect(measurement.phase == .error)
        #expect(measurement.detail.hasPrefix("the query returned a matrix (range vector), not an instant vector"), "\(measurement)")
    }

    func aStringIsAnError() throws {
        let measurement = measure(try check("\"just text\""))
        #expect(measurement == Measurement(check: "errors", phase: .error, detail: "the query returned a string, not an instant vector"))
    }

    func aMalformedQueryIsAnErrorWithPrometheussMessage() throws {
        let measurement = measure(try check("sum(rate(sample_error_ratio[1m]"))
        #expect(measurement.phase == .error)
        #expect(measurement.detail.hasPrefix("Prometheus at \(prometheus.address) refused the query (bad_data: "), "\(measurement)")
        #expect(measurement.detail.contains("parse error"), "\(measurement)")
    }

    func somethingThatIsNotPrometheusIsAnError() throws {
        // node_exporter answers, but not Prometheus's API.
        let measurement = measure(try check("up"), address: "http://" + exporter.address)
        #expect(measurement.phase == .error)
        #expect(measurement.detail.hasPrefix("Prometheus at http://\(exporter.address) answered"), "\(measurement)")
    }

    func anAnswerOverTheLimitIsAnError() throws {
        let client = PrometheusClient(address: prometheus.address, maxBodyBytes: 100)
        guard case .error(let detail) = client.query("sample_error_ratio", at: nowMilliseconds()) else {
            Issue.record("a 100-byte limit let the answer through")
            return
        }
        #expect(detail == "Prometheus at \(prometheus.address) answered more than 100 bytes; narrow the query (e.g. with sum())")
    }

}

extension PrometheusAnswer {
    var samplesCount: Int? {
        if case .samples(let values) = self { values.count } else { nil }
    }
}

func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

func temporaryDirectory() throws -> String {
    let path = "/tmp/switchback-test-analysis-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
