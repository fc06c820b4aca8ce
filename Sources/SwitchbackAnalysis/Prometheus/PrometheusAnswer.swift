/// What an instant query returned: the sample values (of a vector, or the one value of a
/// scalar), or why there are none usable, as the detail of an *error* measurement
/// (`Prometheus at http://127.0.0.1:9090 could not be reached (connection refused)`).
public enum PrometheusAnswer: Sendable, Equatable {
    /// The samples' values, in Prometheus's order (an empty vector is `[]`).
    case samples([Double])
    /// Why the answer is not a result: unreachable, not JSON, the wrong shape, an error.
    case error(String)
}
