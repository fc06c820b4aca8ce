import SwitchbackFiles
/// What the current build last published about its data, in `data-state` in the state
/// directory: the data's reader floor (the oldest version that can read it) and what a
/// rollback to the previous slot would have to do. The app writes it at every start after
/// its migrations, and after every downgrade (see docs/data-safe-rollback.md); `rollbackctl
/// status` shows it, and the launcher reads it before it runs the previous slot.
///
///     published_by=1.2.0
///     published_at=1795326000
///     reader_floor=1.2.0
///     rollback_to=1.1.0
///     rollback=revert
///     detail=step notes-v2 is reverted first
///     end=ok
public struct DataState: Sendable, Equatable {
    /// What a rollback to `rollbackTo` would do to the data.
    public enum Plan: String, Sendable {
        /// Nothing: that version reads the data as it is.
        case none
        /// Revert steps run first.
        case revert
        /// A snapshot is restored first (the newer data is archived).
        case restore
        /// Refused without `--force` (which archives the data).
        case refused
    }

    /// The version that published the file.
    public var publishedBy: String
    /// The build id that published it (`published_build`; nil in files from before the SDK).
    public var publishedBuild: String? = nil
    public var publishedAt: Int64?
    /// The oldest version that can read the data; nil when no migration step applies.
    public var readerFloor: String?
    /// The version the plan is for (the other slot's).
    public var rollbackTo: String
    public var plan: Plan
    /// One sentence about the plan.
    public var detail: String?

    /// Whether a rollback to `rollbackTo` leaves the data readable without `--force`.
    public var isRollbackDataSafe: Bool { plan != .refused }

    public static func path(in directory: StateDirectory) -> String { directory.path + "/data-state" }

    /// The published state; nil when there is none, or it is unreadable (a torn file
    /// counts as none: the launcher then treats the data as readable, as before the app
    /// published anything).
    public static func load(in directory: StateDirectory) -> DataState? {
        guard let bytes = try? FileSystem.read(path(in: directory), limit: 64 << 10) else { return nil }
        return try? parse(bytes, path: path(in: directory))
    }

    /// Parses the file. Throws `.stateInvalid` for a truncated or garbage file, an unknown
    /// plan, or a `published_at` outside `ValueRange.unixTime`.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> DataState {
        func invalid(_ what: String) -> SwitchbackError {
            SwitchbackError(.stateInvalid, "The data state \(path) \(what); the app publishes a new one at its next start.", path: path)
        }
        let text = try KeyValueText.parse(bytes, describing: "The data state \(path)")
        guard text["end"] == "ok", let publishedBy = text["published_by"], let rollbackTo = text["rollback_to"],
              let plan = text["rollback"].flatMap(Plan.init(rawValue:)) else {
            throw invalid("is truncated or not a Switchback file")
        }
        let floor = text["reader_floor"] ?? ""
        let build = text["published_build"]
        return DataState(publishedBy: publishedBy, publishedBuild: build?.isEmpty == true ? nil : build, publishedAt: try text.integer("published_at", in: ValueRange.unixTime, invalid: invalid),
                         readerFloor: floor.isEmpty ? nil : floor, rollbackTo: rollbackTo, plan: plan,
                         // The app's sentence, shown by status and in refusals: one line of
                         // printable text, whatever the app wrote (OutsideText).
                         detail: text["detail"].map { OutsideText($0, limit: Limits.storedReasonBytes).text })
    }

    /// The file's text, as the app writes it (see `DataStatePublisher` in the sample app).
    public func serialized() -> [UInt8] {
        var text = KeyValueText()
        text.append("published_by", publishedBy)
        if let publishedBuild { text.append("published_build", publishedBuild) }
        if let publishedAt { text.append("published_at", String(publishedAt)) }
        text.append("reader_floor", readerFloor ?? "")
        text.append("rollback_to", rollbackTo)
        text.append("rollback", plan.rawValue)
        if let detail { text.append("detail", detail) }
        text.append("end", "ok")
        return text.serialized()
    }

    /// Why this state does not describe `manifest`'s builds (another build, or another app
    /// sharing the state directory, published it), as a clause; nil when it does.
    public func mismatch(with manifest: Manifest) -> String? {
        let build = publishedBuild.map { " (build \($0))" } ?? ""
        let theirs = "published by \(publishedBy)\(build) for a rollback to \(rollbackTo)"
        let ours = "this bundle's current build is \(manifest.current.version)\(manifest.current.build.isEmpty ? "" : " (build \(manifest.current.build))") with \(manifest.previous.version) as previous"
        if publishedBy != manifest.current.version || rollbackTo != manifest.previous.version { return "it was \(theirs), but \(ours)" }
        if let publishedBuild, !manifest.current.build.isEmpty, publishedBuild != manifest.current.build { return "it was \(theirs), but \(ours)" }
        return nil
    }

    /// The published state if it describes `manifest`'s builds (see `mismatch(with:)`).
    public static func load(in directory: StateDirectory, for manifest: Manifest) -> DataState? {
        guard let state = load(in: directory), state.mismatch(with: manifest) == nil else { return nil }
        return state
    }

    /// Whether `version` can read the data as published: its reader floor is at or below it.
    public func isReadable(by version: String) -> Bool {
        Self.isReadable(floor: readerFloor, by: version)
    }

    /// The one rule for "can `version` read data whose reader floor is `floor`?" (nil: no
    /// floor published, every version reads it). The planner's switch path, the launcher's
    /// conversion before a previous build starts, the hand-off and status all come here.
    public static func isReadable(floor: String?, by version: String) -> Bool {
        guard let floor else { return true }
        return DottedVersion.compare(floor, version) <= 0
    }
}

/// Compares versions like "1.2.0" and "1.10.0-rc.1" without Foundation: numeric dotted
/// components (missing ones count as 0), then a release above any of its pre-releases,
/// pre-releases compared as text.
public enum DottedVersion {
    /// Negative, zero or positive as `a` is below, equal to or above `b`.
    public static func compare(_ a: String, _ b: String) -> Int {
        let (aCore, aPre) = split(a), (bCore, bPre) = split(b)
        for index in 0..<max(aCore.count, bCore.count) {
            let x = index < aCore.count ? aCore[index] : 0, y = index < bCore.count ? bCore[index] : 0
            if x != y { return x < y ? -1 : 1 }
        }
        switch (aPre, bPre) {
        case (nil, nil): return 0
        case (nil, _?): return 1
        case (_?, nil): return -1
        case (let x?, let y?): return x == y ? 0 : (x < y ? -1 : 1)
        }
    }

    static func split(_ text: String) -> ([Int], String?) {
        let withoutBuild = text.split(separator: "+", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let parts = withoutBuild.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        // A component too large for Int counts as the largest: "1.99999999999999999999" is
        // still above "1.2", and nothing traps.
        let core = (parts.first ?? "").split(separator: ".").map { part -> Int in
            if let value = Int(part) { return value }
            return !part.isEmpty && part.utf8.allSatisfy({ (0x30...0x39).contains($0) }) ? Int.max : 0
        }
        return (core, parts.count > 1 ? String(parts[1]) : nil)
    }
}
