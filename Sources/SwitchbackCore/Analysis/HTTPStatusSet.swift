/// The HTTP statuses an http check counts as success (`analysis.check.NAME.success_status`):
/// a comma-separated list of statuses and ranges, `200-299` (the default) or `200-399,404`.
public struct HTTPStatusSet: Sendable, Equatable, CustomStringConvertible {
    /// The ranges, as written.
    public var ranges: [ClosedRange<Int>]

    /// 200-299.
    public static let success = HTTPStatusSet(ranges: [200...299])

    public init(ranges: [ClosedRange<Int>]) {
        self.ranges = ranges
    }

    /// Reads `200-299,404`; nil unless every item is a status from 100 to 599 or a range of
    /// them, low to high.
    public init?(_ text: String) {
        var ranges: [ClosedRange<Int>] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let item = item.filter { $0 != " " }
            let bounds = item.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 1 || bounds.count == 2,
                  let low = Int(bounds[0]), let high = Int(bounds[bounds.count - 1]),
                  (100...599).contains(low), (100...599).contains(high), low <= high else { return nil }
            ranges.append(low...high)
        }
        guard !ranges.isEmpty else { return nil }
        self.ranges = ranges
    }

    /// Whether `status` counts as success.
    public func contains(_ status: Int) -> Bool {
        ranges.contains { $0.contains(status) }
    }

    public var description: String {
        ranges.map { $0.lowerBound == $0.upperBound ? String($0.lowerBound) : "\($0.lowerBound)-\($0.upperBound)" }
            .joined(separator: ",")
    }
}
