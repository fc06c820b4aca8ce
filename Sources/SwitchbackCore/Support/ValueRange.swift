/// The ranges every number read from the state directory, the manifest or a directive must
/// fall in (docs/fuzzing.md). A value outside its range is damage like a malformed line: the
/// parser reports it (or drops the line, where lines are independent), so nothing computed
/// from a parsed value can overflow and trap.
public enum ValueRange {
    /// Seconds since the epoch: 1970-01-01 00:00:00 through 9999-12-31 23:59:59 UTC.
    public static let unixTime: ClosedRange<Int64> = 0...253_402_300_799
    /// Counts of starts, tries and restarts: up to a million (a count only ever goes up by one).
    public static let count: ClosedRange<Int> = 0...1_000_000
    /// Durations in settings (milliseconds or seconds): up to 2^31 - 1, so a doubled backoff
    /// or a sum of two never overflows.
    public static let duration: ClosedRange<Int> = 0...Int(Int32.max)
    /// File sizes in bytes: up to 1 TiB.
    public static let fileSize: ClosedRange<Int64> = 0...(1 << 40)
    /// Process ids: 1 through 2^31 - 1 (never 0 or negative, which `kill(2)` reads as a group).
    public static let processID: ClosedRange<Int32> = 1...Int32.max

    /// "out of range: N (expected A...B)": the part of an error sentence that names what was
    /// found and what is allowed.
    static func describe<T: BinaryInteger>(_ text: String, _ range: ClosedRange<T>) -> String {
        "\(text) (expected a whole number from \(range.lowerBound) to \(range.upperBound))"
    }
}

extension KeyValueText {
    /// The integer value of `key`: nil when the key is absent; throws `.stateInvalid` (or the
    /// error `invalid` makes) naming the key, the text found and the range when the value is
    /// not a whole number within `range`.
    func integer<T: FixedWidthInteger>(_ key: String, in range: ClosedRange<T>,
                                       invalid: (String) -> SwitchbackError) throws(SwitchbackError) -> T? {
        guard let text = self[key] else { return nil }
        guard let value = T(text), range.contains(value) else {
            throw invalid("has an invalid \(key) line: \(ValueRange.describe("'\(text.prefix(40))'", range))")
        }
        return value
    }
}
