import CSwitchbackHTTP
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwitchbackCore
import SwitchbackFiles

/// Instant queries against a Prometheus server (`GET /api/v1/query?query=...&time=...`),
/// through the system's libcurl within hard limits. Never throws: every way the answer can
/// be unusable (unreachable, a status other than 200, not JSON, the wrong shape, Prometheus's
/// own `"status":"error"`, more than `maxBodyBytes`) is a `PrometheusAnswer.error` sentence,
/// so a measurement is an *error*, never a crash and never a pass.
public struct PrometheusClient: Sendable {
    /// The server's base URL, e.g. `http://127.0.0.1:9090`.
    public let address: String
    /// The query's deadline.
    public let timeoutMilliseconds: Int
    /// The most of an answer read: a larger one is an error.
    public let maxBodyBytes: Int

    public init(address: String, timeoutMilliseconds: Int = 5000, maxBodyBytes: Int = 4 << 20) {
        var address = address
        while address.hasSuffix("/") { address.removeLast() }
        self.address = address
        self.timeoutMilliseconds = timeoutMilliseconds
        self.maxBodyBytes = maxBodyBytes
    }

    /// The URL of `query` evaluated at `unixMilliseconds`.
    public func url(of query: String, at unixMilliseconds: Int64) -> String {
        let seconds = "\(unixMilliseconds / 1000).\(String(unixMilliseconds % 1000 + 1000).dropFirst())"
        return "\(address)/api/v1/query?query=\(Self.percentEncoded(query))&time=\(seconds)"
    }

    /// Whether queries go straight to the server whatever proxy the environment names: a
    /// loopback address does (what is on this host never crosses a proxy, which could write
    /// the answers that judge a build); any other follows `https_proxy`, `http_proxy`,
    /// `no_proxy` as libcurl reads them (docs/analysis.md).
    public var isDirect: Bool { NetworkHost.host(ofURL: address).map { NetworkHost.isLoopback($0) } ?? false }

    /// Runs the instant query `query` at `unixMilliseconds` (Unix time). Blocks up to the timeout.
    public func query(_ query: String, at unixMilliseconds: Int64) -> PrometheusAnswer {
        let answer = HTTPGet.get(url(of: query, at: unixMilliseconds), timeoutMilliseconds: timeoutMilliseconds,
                                 maxBody: maxBodyBytes, headers: ["Accept: application/json"], direct: isDirect)
        return Self.decode(answer, address: address, timeoutMilliseconds: timeoutMilliseconds, maxBodyBytes: maxBodyBytes)
    }

    /// Measures `check`: its query with `variables` substituted, run now, judged by its conditions.
    public func measure(_ check: AnalysisCheck.Prometheus, name: String, variables: [String: String],
                        at unixMilliseconds: Int64) -> Measurement {
        switch query(check.query(substituting: variables), at: unixMilliseconds) {
        case .samples(let values): return check.measurement(of: values, check: name)
        case .error(let detail): return Measurement(check: name, phase: .error, detail: detail)
        }
    }

    static func decode(_ answer: HTTPGet.Answer, address: String, timeoutMilliseconds: Int, maxBodyBytes: Int) -> PrometheusAnswer {
        let server = "Prometheus at \(address)"
        if answer.stop == Int32(SWITCHBACK_HTTP_STOP_TOO_LARGE) || answer.stop == Int32(SWITCHBACK_HTTP_STOP_ANNOUNCED_TOO_LARGE) {
            return .error("\(server) answered more than \(maxBodyBytes) bytes; narrow the query (e.g. with sum())")
        }
        if answer.curlCode == 28 { return .error("\(server) did not answer within \(timeoutMilliseconds) ms") }
        if let failure = answer.failure(timeoutMilliseconds: timeoutMilliseconds) {
            return .error("\(server) could not be reached (\(failure))")
        }
        let response = try? JSONDecoder().decode(QueryResponse.self, from: Data(answer.body))
        if let response, response.status == "error" || answer.status != 200 {
            let kind = response.errorType.map { "\(OutsideText($0).text): " } ?? ""
            let text = OutsideText(response.error ?? "no error message").text
            if answer.status == 400 || answer.status == 422 { return .error("\(server) refused the query (\(kind)\(text))") }
            return .error("\(server) answered HTTP \(answer.status) with an error (\(kind)\(text))")
        }
        guard answer.status == 200 else {
            return .error("\(server) answered HTTP \(answer.status), not a query result; check the address")
        }
        guard let response else {
            return .error("\(server) answered something that is not a Prometheus query result (not JSON of the expected shape); check the address")
        }
        guard response.status == "success", let data = response.data else {
            return .error("\(server) answered status '\(OutsideText(response.status).text)' without data")
        }
        guard let texts = data.values else {
            switch data.resultType {
            case "matrix": return .error("the query returned a matrix (range vector), not an instant vector; drop the [range] or wrap it in rate() or a *_over_time function")
            case "string": return .error("the query returned a string, not an instant vector")
            default: return .error("the query returned a \(OutsideText(data.resultType).text), not an instant vector")
            }
        }
        var values: [Double] = []
        for text in texts {
            guard let value = QueryResponse.number(text) else {
                return .error("\(server) answered a sample value '\(OutsideText(text).text)' that is not a number")
            }
            values.append(value)
        }
        return .samples(values)
    }

    /// `text` with everything but RFC 3986's unreserved characters percent-encoded.
    public static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: out.unicodeScalars.append(UnicodeScalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(UnicodeScalar(hex[Int(byte >> 4)]))
                out.unicodeScalars.append(UnicodeScalar(hex[Int(byte & 0x0F)]))
            }
        }
        return out
    }
}
