#if canImport(Glibc)
import Glibc
#endif

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
        /// The shared objects the library needs (its DT_NEEDED entries), comma-separated as
        /// the manifest lists them. Kept as text: a steady-state start only stamps its slot's
        /// list (`LibraryStamp.of(list:)`), and splitting both lists into Strings at every
        /// parse cost more than the rest of the record.
        public var neededList: String
        /// The same, one path each: the libraries the launcher loads lazily before it opens
        /// the slot itself with RTLD_NOW.
        public var needed: [String] {
            get { neededList.nonEmptyFields(separatedBy: 0x2C) }
            set { neededList = newValue.joined(separator: ",") }
        }

        public init(version: String, build: String, abiStamp: String, size: Int64, sha256: String, needed: [String] = []) {
            self.init(version: version, build: build, abiStamp: abiStamp, size: size, sha256: sha256, neededList: needed.joined(separator: ","))
        }

        init(version: String, build: String, abiStamp: String, size: Int64, sha256: String, neededList: String) {
            self.version = version
            self.build = build
            self.abiStamp = abiStamp
            self.size = size
            self.sha256 = sha256
            self.neededList = neededList
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
        // One pass over the lines: the launcher parses the manifest at every start, and a
        // lookup per field (each a scan of every line, with its key built by concatenation)
        // cost more than the rest of the parse.
        var format: String?, appID: String?
        var fields = (SlotLines(), SlotLines())
        var numeric: [Int] = []  // indices of numeric settings' lines
        for (index, key) in text.keys.enumerated() {
            let value = text.values[index]
            if let (slot, field) = SlotField.split(key) {
                if slot == 0 { fields.0.keepFirst(field, value) } else { fields.1.keepFirst(field, value) }
            } else if key == "format" {
                if format == nil { format = value }
            } else if key == "app_id" {
                if appID == nil { appID = value }
            } else if isNumericSetting(key) {
                numeric.append(index)
            }
        }
        guard let format = format.flatMap({ Int($0) }) else { throw invalid("has no format line") }
        guard format <= currentFormat else { throw invalid("has format \(format), newer than this launcher reads (\(currentFormat))") }
        guard let appID, !appID.isEmpty else { throw invalid("has no app_id") }
        func slot(_ field: SlotLines, _ name: String) throws(SwitchbackError) -> SlotRecord {
            guard let version = field.version, let abi = field.abi, let size = field.size.flatMap({ Int64($0) }),
                  let sha = field.sha256, SHA256.isHexDigest(sha) else {
                throw invalid("has no complete record of the \(name) slot")
            }
            guard ValueRange.fileSize.contains(size) else {
                throw invalid("has an invalid \(name).size line: \(ValueRange.describe(String(size), ValueRange.fileSize))")
            }
            return SlotRecord(version: version, build: field.build ?? "", abiStamp: abi, size: size,
                              sha256: sha, neededList: field.needed ?? "")
        }
        let manifest = Manifest(appID: appID, current: try slot(fields.0, "current"), previous: try slot(fields.1, "previous"), settings: text)
        // Numeric settings: a value that does not read, or is out of range, is damage. Only
        // the first line of a key counts, as for every lookup.
        var seen: [String] = []
        for index in numeric where !seen.contains(text.keys[index]) {
            let (key, value) = (text.keys[index], text.values[index])
            seen.append(key)
            let range = numericSettings.first { $0.key == key }!.range
            guard let number = Int(value), range.contains(number) else {
                throw invalid("has an invalid \(key) line: \(ValueRange.describe("'\(value.prefix(40))'", range))")
            }
        }
        return manifest
    }

    /// One slot's lines as the parse finds them (the first of each key counts).
    struct SlotLines {
        var version, build, abi, size, sha256, needed: String?

        mutating func keepFirst(_ field: SlotField, _ value: String) {
            switch field {
            case .version: if version == nil { version = value }
            case .build: if build == nil { build = value }
            case .abi: if abi == nil { abi = value }
            case .size: if size == nil { size = value }
            case .sha256: if sha256 == nil { sha256 = value }
            case .needed: if needed == nil { needed = value }
            }
        }
    }

    /// The per-slot lines: `current.version`, `previous.sha256`, ...
    enum SlotField {
        case version, build, abi, size, sha256, needed

        /// The slot index (0 current, 1 previous) and field of `key`, if it is a slot line.
        static func split(_ key: String) -> (Int, SlotField)? {
            // Bytes, not Substrings: this runs for every line at every start.
            var key = key
            return key.withUTF8 { bytes -> (Int, SlotField)? in
                let slot: Int, rest: UnsafeBufferPointer<UInt8>
                if bytes.count > 8, bytes[7] == 0x2E, bytes.starts(with: "current.".utf8) {
                    slot = 0
                    rest = UnsafeBufferPointer(rebasing: bytes[8...])
                } else if bytes.count > 9, bytes[8] == 0x2E, bytes.starts(with: "previous.".utf8) {
                    slot = 1
                    rest = UnsafeBufferPointer(rebasing: bytes[9...])
                } else {
                    return nil
                }
                func named(_ name: StaticString) -> Bool {
                    rest.count == name.utf8CodeUnitCount && memcmp(rest.baseAddress!, name.utf8Start, rest.count) == 0
                }
                if named("version") { return (slot, .version) }
                if named("build") { return (slot, .build) }
                if named("abi") { return (slot, .abi) }
                if named("size") { return (slot, .size) }
                if named("sha256") { return (slot, .sha256) }
                if named("needed") { return (slot, .needed) }
                return nil
            }
        }
    }

    /// Whether `key` names a numeric setting. Lengths first (O(1) for native strings): most
    /// keys differ in length from every setting, and the launcher asks for every line.
    static func isNumericSetting(_ key: String) -> Bool {
        let length = key.utf8.count
        return numericSettings.contains { $0.key.utf8.count == length && $0.key == key }
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
        ("remote.splay_s", ValueRange.duration),
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
