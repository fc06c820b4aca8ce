#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwitchbackCore
import SwitchbackRemote

/// Measures a `kind=prometheus` check with one instant query (`GET /api/v1/query`) over the
/// bounded libcurl fetch the directives use, and judges the samples with the check's
/// conditions (`AnalysisCheck.Prometheus.measurement(of:check:)`).
///
/// An unreachable server, an error answer, or an answer of a shape a condition cannot read
/// (a matrix, a string) is an error measurement naming the server, never a pass.
struct PrometheusQueryMeasurer: RolloutMeasurer {
    func measure(_ check: AnalysisCheck, query: String) -> Measurement {
        guard case .prometheus(let prometheus) = check.kind else {
            return Measurement(check: check.name, phase: .error, detail: "not a prometheus check")
        }
        func error(_ detail: String) -> Measurement { Measurement(check: check.name, phase: .error, detail: detail) }
        let base = prometheus.address.hasSuffix("/") ? String(prometheus.address.dropLast()) : prometheus.address
        guard let url = URL(string: base + "/api/v1/query?query=" + Self.percentEncoded(query)) else {
            return error("Prometheus at \(prometheus.address) cannot be queried: the address is not a URL")
        }
        let fetcher = DirectiveFetcher(options: FetchOptions(deadline: .milliseconds(prometheus.timeoutMilliseconds), maxBodyBytes: 4 << 20,
                                                             allowInsecureHTTP: true, userAgent: "switchback-rollout/1"))
        let result = runBlocking { await fetcher.fetch(url) }
        switch result {
        case .fetched(let body, _, _, _):
            switch Self.samples(in: body) {
            case .success(let samples): return prometheus.measurement(of: samples, check: check.name)
            case .failure(let problem): return error("Prometheus at \(prometheus.address) \(problem.text)")
            }
        case .notModified:
            return error("Prometheus at \(prometheus.address) answered 304 to a query")
        case .failed(let outcome):
            return error("Prometheus at \(prometheus.address) could not be queried: \(Self.reason(of: outcome))")
        }
    }

    /// Why a fetch failed, in a few words ("connection refused", "it answered HTTP 400").
    static func reason(of outcome: SyncOutcome) -> String {
        let text: String
        switch outcome {
        case .unreachable(_, let reason), .refused(_, let reason): text = reason
        default: text = outcome.description
        }
        if let range = text.firstRange(of: "answered HTTP ") {
            let status = text[range.upperBound...].prefix { $0 != " " && $0 != "," && $0 != "." }
            return "it answered HTTP \(status)"
        }
        // The fetcher's advice is about directive servers: keep what it found, not what it advises.
        let found = String(text.split(separator: ";").first ?? Substring(text))
        return found.hasSuffix(".") ? String(found.dropLast()) : found
    }

    struct Problem: Error { var text: String }

    /// The sample values of an instant query's answer: a vector's values in order, or a
    /// scalar's value.
    static func samples(in body: Data) -> Result<[Double], Problem> {
        guard let answer = try? JSONDecoder().decode(Answer.self, from: body) else {
            return .failure(Problem(text: "answered something that is not a Prometheus API answer"))
        }
        guard answer.status == "success", let data = answer.data else {
            return .failure(Problem(text: "refused the query: \(answer.error ?? answer.status)"))
        }
        switch data.result {
        case .vector(let values): return .success(values)
        case .scalar(let value): return .success([value])
        case .other(let type): return .failure(Problem(text: "answered a \(type) result; a check needs an instant vector or a scalar"))
        }
    }

    /// `query` as a URL query value: unreserved characters kept, every other byte `%XX`.
    static func percentEncoded(_ query: String) -> String {
        var out = ""
        for byte in query.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out += "%"
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 15)])
            }
        }
        return out
    }

    /// `{"status": ..., "data": {"resultType": ..., "result": ...}, "error": ...}`.
    struct Answer: Decodable {
        var status: String
        var data: Body?
        var error: String?

        struct Body: Decodable {
            var result: Result

            enum CodingKeys: String, CodingKey { case resultType, result }

            enum Result {
                case vector([Double])
                case scalar(Double)
                case other(String)
            }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                let type = try container.decode(String.self, forKey: .resultType)
                switch type {
                case "vector":
                    result = .vector(try container.decode([Sample].self, forKey: .result).map(\.value.number))
                case "scalar":
                    result = .scalar(try container.decode(Pair.self, forKey: .result).number)
                default:
                    result = .other(type)
                }
            }
        }

        struct Sample: Decodable { var value: Pair }

        /// `[timestamp, "value"]`; the value as Prometheus spells it (`NaN`, `+Inf`).
        struct Pair: Decodable {
            var number: Double
            init(from decoder: any Decoder) throws {
                var container = try decoder.unkeyedContainer()
                _ = try container.decode(Double.self)
                let text = try container.decode(String.self)
                switch text {
                case "NaN": number = .nan
                case "+Inf", "Inf": number = .infinity
                case "-Inf": number = -.infinity
                default:
                    guard let value = Double(text) else {
                        throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a number: \(text)")
                    }
                    number = value
                }
            }
        }
    }
}
