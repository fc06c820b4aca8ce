#if canImport(Glibc)
import Glibc
#endif

/// Publishes `data-state` in the launcher's state directory: the data's reader floor and
/// what a rollback to the previous slot would do to it, for `rollbackctl status` and for the
/// launcher's check before it runs the previous slot (docs/data-safe-rollback.md). The
/// version and build that publish it are in the file, so a state published by another
/// build (or another app sharing the directory) is ignored.
struct DataStatePublisher {
    let path: String
    let version: String
    let build: String
    /// The previous slot's version, parsed only when a plan is made (not at every start).
    let target: String

    /// Nil unless this is the current slot under the launcher: only the newer build knows
    /// its steps, and the previous slot's data is what a rollback left.
    init?(launch: LaunchInfo) {
        guard launch.slot == .current, let directory = launch.stateDirectory,
              let other = launch.otherVersion else { return nil }
        path = directory + "/data-state"
        version = launch.version
        build = launch.build
        target = other
    }

    var exists: Bool { SDKFiles.fileExists(path) }

    /// Removes the file while the data may change under it (a start that runs steps).
    func withdraw() { SDKFiles.removeFile(path) }

    /// Works out the plan and writes the file atomically.
    func publish(_ migrator: Migrator) {
        let floor: String, plan: String, detail: String
        do {
            let planned = try migrator.downgradePlan(to: try Version(tolerant: target))
            floor = planned.readerFloor.map { "\($0)" } ?? ""
            (plan, detail) = Self.describe(planned)
        } catch {
            // Unknown is not safe: say refused, and why.
            (floor, plan, detail) = ("", "refused", "the data's migration ledger cannot be read: \(error)")
        }
        let lines = [
            "published_by=\(version)",
            "published_build=\(Self.escape(build))",
            "published_at=\(time(nil))",
            "reader_floor=\(floor)",
            "rollback_to=\(target)",
            "rollback=\(plan)",
            "detail=\(Self.escape(detail))",
            "end=ok",
        ]
        SDKFiles.replaceFile(path, with: lines.joined(separator: "\n") + "\n")
    }

    static func describe(_ planned: DowngradePlan) -> (String, String) {
        if planned.isSafe { return ("none", "\(planned.target) reads the data as it is") }
        let names = planned.steps.map(\.name).joined(separator: ", ")
        if !planned.isPossible {
            return ("refused", noWayBack(planned.steps.filter { $0.action == .impossible }.map(\.name)))
        }
        if let restored = planned.steps.first(where: { if case .restoreSnapshot = $0.action { return true } else { return false } }) {
            return ("restore", "the snapshot taken before step \(restored.name) is restored first (undoing \(names)); the newer data is archived")
        }
        return ("revert", "the revert of \(names) runs first")
    }

    /// Why the data cannot be converted back, one clause for the published plan (which status
    /// and the metrics read before anything runs) and the downgrade's own answer (what the
    /// launcher learns by converting), so that both say the same.
    static func noWayBack(_ steps: [String]) -> String {
        let names = steps.map { "\"\($0)\"" }.joined(separator: ", ")
        return steps.count == 1 ? "migration step \(names) has neither a revert nor a snapshot to undo it with"
            : "migration steps \(names) have neither a revert nor a snapshot to undo them with"
    }

    /// `KeyValueText.escape` (backslash, newline, tab, carriage return), by scalar: "\r\n" is
    /// one Character. Written again here because the SDK links into every app's slot and
    /// SwitchbackCore (the launcher's library) does not belong there; `DataState.parse` in
    /// SwitchbackCore reads what this writes, and the SDK's tests check the two agree.
    static func escape(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result.append(contentsOf: "\\\\".unicodeScalars)
            case "\n": result.append(contentsOf: "\\n".unicodeScalars)
            case "\t": result.append(contentsOf: "\\t".unicodeScalars)
            case "\r": result.append(contentsOf: "\\r".unicodeScalars)
            default: result.append(scalar)
            }
        }
        return String(result)
    }
}
