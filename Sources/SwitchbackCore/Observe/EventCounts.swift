/// The counters the metrics export (switches, rollbacks by source, failed starts), kept in
/// `observe-counts` in the state directory so they survive restarts and the history's
/// compaction, and cost one small read to export. Incremented by `Observer` under the state
/// lock when a history event is appended; a missing file is seeded once from the history.
public struct EventCounts: Sendable, Equatable {
    public var switches: Int = 0
    /// Switches to the previous slot, by who made them (`cli`, `remote`, `auto`).
    public var rollbacks: [ChoiceSource: Int] = [:]
    /// Starts that did not run the chosen slot (`fallback`), supervised starts not ready in
    /// time (`hung_start`), and live switches whose new child never became ready (`switch_failed`).
    public var failedStarts: Int = 0
    /// Bake windows ended by the analysis, by its verdict's word (`AnalysisVerdict.words`:
    /// passed, failed, held, inconclusive, would_roll_back, would_hold): the `probation_WORD`
    /// history events.
    public var analysisResults: [String: Int] = [:]

    /// The results `analysisResults` counts, in the order the metrics list them.
    public static let analysisResultNames = AnalysisVerdict.words

    public init() {}

    /// The counts of `events` (a seed from the history).
    public init(events: [SwitchHistoryEvent]) {
        for event in events { add(event) }
    }

    /// Counts one event.
    public mutating func add(_ event: SwitchHistoryEvent) {
        switch event.kind.rawValue {
        case "switch":
            switches += 1
            if event.to == .previous { rollbacks[event.source, default: 0] += 1 }
        case "fallback", "hung_start", "switch_failed":
            failedStarts += 1
        case let kind where kind.hasPrefix("probation_") && Self.analysisResultNames.contains(String(kind.dropFirst(10))):
            analysisResults[String(kind.dropFirst(10)), default: 0] += 1
        default:
            break
        }
    }

    public static func path(in directory: StateDirectory) -> String { directory.path + "/observe-counts" }

    /// Reads the file; nil when it is missing or damaged (then seeded from the history).
    public static func load(from directory: StateDirectory) -> EventCounts? {
        guard let bytes = try? FileSystem.read(path(in: directory), limit: 4096),
              let text = try? KeyValueText.parse(bytes, describing: "observe-counts") else { return nil }
        func number(_ key: String) -> Int? { text[key].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil } }
        guard let switches = number("switches"), let failed = number("failed_starts") else { return nil }
        var counts = EventCounts()
        counts.switches = switches
        counts.failedStarts = failed
        for source in [ChoiceSource.cli, .remote, .auto] {
            if let value = number("rollbacks_" + source.rawValue) { counts.rollbacks[source] = value }
        }
        for result in analysisResultNames {
            if let value = number("analysis_" + result) { counts.analysisResults[result] = value }
        }
        // Written as `successful` before the verdicts had one word each.
        if let value = number("analysis_successful") { counts.analysisResults["passed", default: 0] += value }
        return counts
    }

    /// Writes the file atomically.
    public func save(to directory: StateDirectory) throws(SwitchbackError) {
        var text = KeyValueText()
        text.append("switches", String(switches))
        for source in [ChoiceSource.cli, .remote, .auto] { text.append("rollbacks_" + source.rawValue, String(rollbacks[source] ?? 0)) }
        text.append("failed_starts", String(failedStarts))
        for result in Self.analysisResultNames where analysisResults[result] != nil {
            text.append("analysis_" + result, String(analysisResults[result] ?? 0))
        }
        try FileSystem.replace(Self.path(in: directory), with: text.serialized(), durable: false)
    }
}
