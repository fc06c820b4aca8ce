import SwitchbackCore
import Synchronization

/// The pause's last measurements, kept beside the state file (`STATE.checks`) for
/// `rollout-status`: which step, and each check's last phase, sentence and time. Written by
/// the running rollout as each measurement arrives (the state file itself is not written
/// during a pause, when an `--abort` from another shell may write it).
final class RolloutCheckFile: Sendable {
    struct Entry: Equatable, Sendable {
        var check: String
        var phase: String
        var sentence: String
        /// Unix milliseconds.
        var at: Int64
    }

    let step: Int
    private let files: any RolloutFiles & Sendable
    private let entries = Mutex<[Entry]>([])

    init(step: Int, files: any RolloutFiles & Sendable) {
        self.step = step
        self.files = files
        files.writeMeasurements(Self.serialized(step: step, entries: []))
    }

    /// Records `measurement` as its check's last one and rewrites the file.
    func record(_ measurement: Measurement, at now: Int64) {
        let bytes = entries.withLock { entries in
            let entry = Entry(check: measurement.check, phase: measurement.phase.rawValue, sentence: measurement.sentence, at: now)
            if let index = entries.firstIndex(where: { $0.check == measurement.check }) { entries[index] = entry } else { entries.append(entry) }
            return Self.serialized(step: step, entries: entries)
        }
        files.writeMeasurements(bytes)
    }

    static func serialized(step: Int, entries: [Entry]) -> [UInt8] {
        var text = KeyValueText()
        text.append("step", String(step))
        for entry in entries {
            text.append("check.\(entry.check)", "\(entry.phase) \(Limits.truncated(entry.sentence))")
            text.append("check.\(entry.check).at", String(entry.at))
        }
        return text.serialized()
    }

    /// The file's step and entries; nil when it does not read.
    static func parse(_ bytes: [UInt8]) -> (step: Int, entries: [Entry])? {
        guard let text = try? KeyValueText.parse(bytes, describing: "the rollout's measurements"),
              let step = text["step"].flatMap({ Int($0) }) else { return nil }
        var entries: [Entry] = []
        for index in 0..<text.count {
            let key = text.key(at: index)
            guard key.hasPrefix("check."), !key.hasSuffix(".at") else { continue }
            let name = String(key.dropFirst(6))
            let value = text.value(at: index)
            let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            entries.append(Entry(check: name, phase: String(parts[0]), sentence: parts.count > 1 ? String(parts[1]) : "",
                                 at: text["check.\(name).at"].flatMap { Int64($0) } ?? 0))
        }
        return (step, entries)
    }
}
