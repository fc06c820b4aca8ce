/// What scripts/bundle recorded about a bundle: the app id, and each slot's version, build,
/// ABI stamp, size and SHA-256. The file is `manifest` at the bundle's root, in the
/// `key=value` format of `KeyValueText`.
public struct Manifest: Sendable, Equatable {
    /// The format this version of Switchback reads and writes.
    public static let currentFormat = 1

    /// What the manifest says about one slot.
    public struct SlotRecord: Sendable, Equatable {
        public var version: String
        public var build: String
        public var abiStamp: String
        public var size: Int64
        /// Lowercase hex.
        public var sha256: String
        /// The shared objects the library needs (its DT_NEEDED entries), which the launcher
        /// loads lazily before it opens the slot itself with RTLD_NOW.
        public var needed: [String]

        public init(version: String, build: String, abiStamp: String, size: Int64, sha256: String, needed: [String] = []) {
            self.version = version
            self.build = build
            self.abiStamp = abiStamp
            self.size = size
            self.sha256 = sha256
            self.needed = needed
        }
    }

    public var appID: String
    public var current: SlotRecord
    public var previous: SlotRecord
    /// Every key of the file, for settings later issues add.
    public var settings: KeyValueText

    public init(appID: String, current: SlotRecord, previous: SlotRecord, settings: KeyValueText = KeyValueText()) {
        self.appID = appID
        self.current = current
        self.previous = previous
        self.settings = settings
    }

    /// The record of `slot`.
    public subscript(slot: BuildSlot) -> SlotRecord {
        slot == .current ? current : previous
    }

    /// Reads `<bundle>/manifest`. Throws `.manifestMissing` or `.manifestInvalid` with a
    /// sentence that says to rebuild the bundle, and `.insecurePermissions` (before reading
    /// a byte) when another user could change the bundle's directories or the manifest
    /// (`checkBundleDirectories`; the file is opened with `O_NOFOLLOW` and checked by `fstat`).
    public static func load(bundleRoot: String) throws(SwitchbackError) -> Manifest {
        let path = bundleRoot + "/manifest"
        try checkBundleDirectories(bundleRoot: bundleRoot)
        let bytes: [UInt8]?
        do { bytes = try FileSystem.read(path, limit: 1 << 20) } catch {
            if error.code == .insecurePermissions { throw manifestUntrusted(error, path: path) }
            throw SwitchbackError(.manifestInvalid, "Cannot read the manifest \(path): \(error.message) Rebuild the bundle with scripts/bundle.", path: path, errno: error.errno)
        }
        guard let bytes else {
            throw SwitchbackError(.manifestMissing, "The bundle has no manifest at \(path); rebuild it with scripts/bundle.", path: path)
        }
        return try parse(bytes, path: path)
    }

    /// Parses manifest text.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> Manifest {
        func invalid(_ what: String) -> SwitchbackError {
            SwitchbackError(.manifestInvalid, "The manifest \(path) \(what); rebuild the bundle with scripts/bundle.", path: path)
        }
        let text: KeyValueText
        do { text = try KeyValueText.parse(bytes, describing: "The manifest \(path)") } catch { throw invalid("is not a Switchback manifest") }
        guard let format = text["format"].flatMap({ Int($0) }) else { throw invalid("has no format line") }
        guard format <= currentFormat else { throw invalid("has format \(format), newer than this launcher reads (\(currentFormat))") }
        guard let appID = text["app_id"], !appID.isEmpty else { throw invalid("has no app_id") }
        func slot(_ name: String) throws(SwitchbackError) -> SlotRecord {
            guard let version = text[name + ".version"], let abi = text[name + ".abi"],
                  let size = text[name + ".size"].flatMap({ Int64($0) }),
                  let sha = text[name + ".sha256"], SHA256.isHexDigest(sha) else {
                throw invalid("has no complete record of the \(name) slot")
            }
            guard ValueRange.fileSize.contains(size) else {
                throw invalid("has an invalid \(name).size line: \(ValueRange.describe(String(size), ValueRange.fileSize))")
            }
            let needed = (text[name + ".needed"] ?? "").utf8.split(separator: 0x2C).map { String(Substring($0)) }
            return SlotRecord(version: version, build: text[name + ".build"] ?? "", abiStamp: abi, size: size,
                              sha256: sha, needed: needed)
        }
        let manifest = Manifest(appID: appID, current: try slot("current"), previous: try slot("previous"), settings: text)
        // Numeric settings: a value that does not read, or is out of range, is damage.
        for (key, range) in numericSettings {
            _ = try text.integer(key, in: range) { invalid($0) }
        }
        return manifest
    }

    /// The numeric settings and their ranges (docs/fuzzing.md): durations up to 2^31 - 1
    /// (milliseconds, or seconds for `remote.interval_s`), counts up to a million.
    static let numericSettings: [(key: String, range: ClosedRange<Int>)] = [
        ("trial.tries", ValueRange.count),
        ("remote.interval_s", ValueRange.duration),
        ("remote.deadline_ms", ValueRange.duration),
        ("remote.before_start_deadline_ms", ValueRange.duration),
        ("remote.max_staleness_s", ValueRange.duration),
        ("remote.retry_floor_s", ValueRange.duration),
        ("supervise.grace_ms", ValueRange.duration),
        ("supervise.backoff_initial_ms", ValueRange.duration),
        ("supervise.backoff_max_ms", ValueRange.duration),
        ("supervise.backoff_reset_after_ms", ValueRange.duration),
        ("supervise.crash_limit", ValueRange.count),
        ("supervise.crash_window_ms", ValueRange.duration),
        ("supervise.poll_ms", ValueRange.duration),
        ("supervise.start_deadline_ms", ValueRange.duration),
        ("supervise.min_ready_ms", ValueRange.duration),
        ("supervise.watchdog_ms", ValueRange.duration),
        ("supervise.probe_interval_ms", ValueRange.duration),
        ("supervise.drain_ms", ValueRange.duration),
    ]
}

extension Manifest {
    /// The bundle's directory layout: `bin/`, `slots/<slot>/libAppCore.so`, `manifest`.
    public static func slotPath(bundleRoot: String, slot: BuildSlot) -> String {
        bundleRoot + "/slots/" + slot.rawValue + "/libAppCore.so"
    }
}

extension Manifest {
    /// How many starts a new build gets to be marked good (`trial.tries`, default 3).
    public var trialTries: Int {
        settings["trial.tries"].flatMap { Int($0) }.map { min(max(1, $0), ValueRange.count.upperBound) } ?? 3
    }

    /// Whether both slots hold the same build (`scripts/bundle --first-release`): there is
    /// no other build to roll back to, so rollbacks are refused and automatic rollback
    /// keeps the build running.
    public var isFirstRelease: Bool { current.sha256 == previous.sha256 }

    /// Whether an exit code 0 marks a start good (`trial.good_on_exit_zero`, default true).
    public var goodOnExitZero: Bool {
        settings["trial.good_on_exit_zero"] != "false"
    }
}

extension Manifest {
    /// A millisecond setting, or `fallback`; clamped to `ValueRange.duration` (`parse`
    /// rejects values outside it; this keeps a manifest made in code just as safe).
    func milliseconds(_ key: String, default fallback: Int) -> Int {
        settings[key].flatMap { Int($0) }.map { min(max(0, $0), ValueRange.duration.upperBound) } ?? fallback
    }

    /// Whether the launcher supervises the app in a child process (`supervise`, default
    /// false; `SWITCHBACK_SUPERVISE=1` or `0` overrides it for one run).
    public var supervise: Bool { settings["supervise"] == "true" }
}
