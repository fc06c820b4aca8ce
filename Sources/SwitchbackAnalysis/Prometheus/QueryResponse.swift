#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The JSON of Prometheus's `/api/v1/query` (https://prometheus.io/docs/prometheus/latest/querying/api/):
///
///     {"status":"success","data":{"resultType":"vector","result":[{"metric":{...},"value":[1795317164.1,"0.31"]}]}}
///     {"status":"error","errorType":"bad_data","error":"1:5: parse error: ..."}
///
/// Values are strings (`"0.31"`, `"NaN"`, `"+Inf"`); only vectors and scalars are results.
struct QueryResponse: Decodable {
    var status: String
    var data: Result?
    var errorType: String?
    var error: String?

    struct Result: Decodable {
        var resultType: String
        /// The values of a vector or a scalar; nil for another type (matrix, string).
        var values: [String]?

        enum CodingKeys: String, CodingKey { case resultType, result }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            resultType = try container.decode(String.self, forKey: .resultType)
            switch resultType {
            case "vector": values = try container.decode([VectorSample].self, forKey: .result).map(\.value.value)
            case "scalar": values = [try container.decode(SamplePair.self, forKey: .result).value]
            default: values = nil
            }
        }
    }

    struct VectorSample: Decodable {
        var value: SamplePair
    }

    /// `[timestamp, "value"]`.
    struct SamplePair: Decodable {
        var value: String

        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            _ = try container.decode(Double.self)
            value = try container.decode(String.self)
        }
    }

    /// A sample value as Prometheus writes it: a decimal, `NaN`, `+Inf`, `-Inf`.
    static func number(_ text: String) -> Double? {
        switch text {
        case "NaN": return .nan
        case "+Inf", "Inf": return .infinity
        case "-Inf": return -.infinity
        default:
            guard text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D || $0 == 0x2B || $0 == 0x65 || $0 == 0x45 }) else { return nil }
            return Double(text)
        }
    }
}
