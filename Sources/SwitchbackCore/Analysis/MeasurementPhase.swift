/// What one measurement of a check found, with Argo Rollouts' names (docs/analysis.md):
/// - `successful`: the check's condition held;
/// - `failed`: it did not (for an HTTP check: too many probes failed, or too slow);
/// - `inconclusive`: neither held, or too few probes to judge;
/// - `error`: the provider could not answer (Prometheus unreachable, an answer of the wrong
///   shape, a query that returned no sample the condition needs). Errors never fail an
///   analysis unless `analysis.consecutive_error_limit` says so.
public enum MeasurementPhase: String, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    case successful
    case failed
    case inconclusive
    case error

    public var description: String { rawValue }
}
