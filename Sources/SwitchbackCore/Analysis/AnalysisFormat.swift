/// How numbers read in the analysis's sentences, without Foundation: a query's value as
/// `0.31`, `NaN` or `+Inf`; a percentage as `31` or `5.2`.
public enum AnalysisFormat {
    /// A sample's value: Prometheus's spellings for the special values (`NaN`, `+Inf`,
    /// `-Inf`), whole numbers without a fraction, others rounded to 4 decimals (`0.0312`)
    /// and very small ones as Swift writes them (`1e-05`).
    public static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        if abs(value) < 1e-4 { return "\(value)" }
        let rounded = (value * 10_000).rounded() / 10_000
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int64(rounded)) }
        return "\(rounded)"
    }

    /// A percentage to one decimal, without `.0`: `31`, `5.2`, `100`.
    public static func percent(_ value: Double) -> String {
        guard value.isFinite else { return number(value) }
        // The sign apart: -0.2 is "-0.2", not "0.2" (the whole part of it is 0).
        let tenths = (value * 10).rounded()
        let sign = tenths < 0 ? "-" : ""
        let magnitude = Int64(abs(tenths))
        return magnitude % 10 == 0 ? sign + String(magnitude / 10) : "\(sign)\(magnitude / 10).\(magnitude % 10)"
    }

    /// A list of sample values for a sentence: the first three, then how many more.
    public static func samples(_ values: [Double]) -> String {
        if values.isEmpty { return "no samples" }
        let shown = values.prefix(3).map(number).joined(separator: ", ")
        return values.count > 3 ? "\(shown) and \(values.count - 3) more" : shown
    }
}
