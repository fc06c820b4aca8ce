/// What `serve --http` has answered, for `GET /metrics` in Prometheus' text format (0.0.4):
///
///     sample_http_responses_total{code="200",version="1.3.0",build="0a1b2c3d4e5f"} 41
///     sample_http_request_duration_seconds_bucket{version="1.3.0",build="0a1b2c3d4e5f",le="0.005"} 40
///     ...
///     sample_http_request_duration_seconds_sum{version="1.3.0",build="0a1b2c3d4e5f"} 0.052
///     sample_http_request_duration_seconds_count{version="1.3.0",build="0a1b2c3d4e5f"} 41
///
/// Every response but those to `GET /metrics` itself counts, from the request read to the
/// answer ready to send. The codes 200 and 500 are there from the start (at 0), so an error ratio
/// over a build that never failed is 0, not an empty result.
struct ResponseMetrics {
    /// The histogram's upper bounds, in seconds (`+Inf` follows).
    static let bucketBounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private(set) var responses: [Int: Int] = [200: 0, 500: 0]
    /// The count of each bucket alone (not cumulative), the last one `+Inf`'s.
    private var buckets = [Int](repeating: 0, count: bucketBounds.count + 1)
    private(set) var durationSum = 0.0
    private(set) var count = 0

    /// Counts one response of `status` that took `seconds`.
    mutating func record(status: Int, seconds: Double) {
        responses[status, default: 0] += 1
        let index = Self.bucketBounds.firstIndex { seconds <= $0 } ?? Self.bucketBounds.count
        buckets[index] += 1
        durationSum += seconds
        count += 1
    }

    /// The exposition, labelled with this build's `version` and `build`.
    func exposition(version: String, build: String) -> String {
        let labels = "version=\"\(escape(version))\",build=\"\(escape(build))\""
        var text = "# HELP sample_http_responses_total HTTP responses of the sample server, by status code (GET /metrics not counted).\n"
        text += "# TYPE sample_http_responses_total counter\n"
        for (status, total) in responses.sorted(by: { $0.key < $1.key }) {
            text += "sample_http_responses_total{code=\"\(status)\",\(labels)} \(total)\n"
        }
        text += "# HELP sample_http_request_duration_seconds Time from a request read to its answer being ready to send (GET /metrics not counted).\n"
        text += "# TYPE sample_http_request_duration_seconds histogram\n"
        var cumulative = 0
        for (index, bound) in Self.bucketBounds.enumerated() {
            cumulative += buckets[index]
            text += "sample_http_request_duration_seconds_bucket{\(labels),le=\"\(bound)\"} \(cumulative)\n"
        }
        text += "sample_http_request_duration_seconds_bucket{\(labels),le=\"+Inf\"} \(count)\n"
        text += "sample_http_request_duration_seconds_sum{\(labels)} \(durationSum)\n"
        text += "sample_http_request_duration_seconds_count{\(labels)} \(count)\n"
        return text
    }

    /// A label value as the text format wants it: backslash, quote and newline escaped.
    private func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
