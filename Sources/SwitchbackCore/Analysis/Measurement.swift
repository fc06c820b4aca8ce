/// One measurement of one check: its phase and the sentence that says what was measured.
///
/// `sentence` starts with the check's name, as every result sentence of the analysis does:
/// `http: 31% of 58 probes failed (limit 5%) over 60 s`; `detail` is the same without it.
public struct Measurement: Sendable, Equatable, CustomStringConvertible {
    /// The check's name (`analysis.checks`).
    public var check: String
    /// What the measurement found.
    public var phase: MeasurementPhase
    /// The sentence without the check's name: `31% of 58 probes failed (limit 5%) over 60 s`.
    public var detail: String

    public init(check: String, phase: MeasurementPhase, detail: String) {
        self.check = check
        self.phase = phase
        self.detail = detail
    }

    /// The sentence naming the check: `http: 31% of 58 probes failed (limit 5%) over 60 s`.
    public var sentence: String { "\(check): \(detail)" }

    public var description: String { "\(phase) \(sentence)" }
}
