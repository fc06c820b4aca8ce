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

        /// Makes the `needed` list's bundle-relative entries (`lib/libswiftCore.so`, what
        /// a self-contained bundle lists) absolute, under `bundleRoot`: the launcher opens,
        /// checks and stamps its libraries by absolute path, so the bundle works wherever it
        /// was moved.
        mutating func resolveLibraries(in bundleRoot: String) {
            guard let first = neededList.utf8.first, first != 0x2F else { return }
            // One pass over the bytes into one new string: this runs for both slots at every
            // start, and splitting into Substrings and appending cost the launcher more than
            // parsing the rest of the manifest (docs/benchmarks.md, issue 38).
            let root = Array(bundleRoot.utf8)
            var list = neededList
            neededList = list.withUTF8 { bytes in
                let entries = bytes.reduce(1) { $1 == 0x2C ? $0 + 1 : $0 }
                return String(unsafeUninitializedCapacity: bytes.count + entries * (root.count + 1)) { out in
                    var written = 0, start = 0
                    func put(_ byte: UInt8) { out[written] = byte; written += 1 }
                    while start <= bytes.count {
                        var end = start
                        while end < bytes.count, bytes[end] != 0x2C { end += 1 }
                        if end > start {
                            if written > 0 { put(0x2C) }
                            if bytes[start] != 0x2F {
                                for byte in root { put(byte) }
                                put(0x2F)
                            }
                            for index in start..<end { put(bytes[index]) }
                        }
                        start = end + 1
                    }
                    return written
                }
            }
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
        var manifest = try parse(bytes, path: path)
        manifest.current.resolveLibraries(in: bundleRoot)
        manifest.previous.resolveLibraries(in: bundleRoot)
        return manifest
    }

    /// Parses manifest text.
    public static func parse(_ bytes: [UInt8], path: String) throws(SwitchbackError) -> Manifest {
        func invalid(_ what: String) -> SwitchbackError {
            SwitchbackError(.manifestInvalid, "The manifest \(path) \(what); rebuild the bundle with scripts/bundle.", path: path)
        }
        let text: KeyValueText
        do { text = try KeyValueText.parse(bytes, describing: "The manifest \(path)") } catch { throw invalid("is not a Switchback manifest") }
        // One pass over the lines, by the bytes of their keys: the launcher parses the manifest
        // at every start, and only the values it keeps become Strings.
        var format: Int?, appID: Int?
        var fields = (SlotLines(), SlotLines())
        var numeric: [Int] = []  // indices of numeric settings' lines
        for index in 0..<text.count {
            switch text.withKeyBytes(at: index, Line.kind) {
            case .slot(0, let field): fields.0.keepFirst(field, index)
            case .slot(_, let field): fields.1.keepFirst(field, index)
            case .format: if format == nil { format = index }
            case .appID: if appID == nil { appID = index }
            case .numeric: numeric.append(index)
            case .other: break
            }
        }
        guard let format = format.flatMap({ Int(text.value(at: $0)) }) else { throw invalid("has no format line") }
        guard format <= currentFormat else { throw invalid("has format \(format), newer than this launcher reads (\(currentFormat))") }
        guard let appID = appID.map({ text.value(at: $0) }), !appID.isEmpty else { throw invalid("has no app_id") }
        func slot(_ field: SlotLines, _ name: String) throws(SwitchbackError) -> SlotRecord {
            func value(_ index: Int?) -> String? { index.map { text.value(at: $0) } }
            guard let version = value(field.version), let abi = value(field.abi),
                  let size = value(field.size).flatMap({ Int64($0) }),
                  let sha = value(field.sha256), FileDigest.isHexDigest(sha) else {
                throw invalid("has no complete record of the \(name) slot")
            }
            guard ValueRange.fileSize.contains(size) else {
                throw invalid("has an invalid \(name).size line: \(ValueRange.describe(String(size), ValueRange.fileSize))")
            }
            return SlotRecord(version: version, build: value(field.build) ?? "", abiStamp: abi, size: size,
                              sha256: sha, neededList: value(field.needed) ?? "")
        }
        let manifest = Manifest(appID: appID, current: try slot(fields.0, "current"), previous: try slot(fields.1, "previous"), settings: text)
        // Numeric settings: a value that does not read, or is out of range, is damage. Only
        // the first line of a key counts, as for every lookup.
        for index in numeric where text.index(of: text.key(at: index)) == index {
            let (key, value) = (text.key(at: index), text.value(at: index))
            let range = text.withKeyBytes(at: index, numericRange)!
            guard let number = Int(value), range.contains(number) else {
                throw invalid("has an invalid \(key) line: \(ValueRange.describe("'\(value.prefix(40))'", range))")
            }
        }
        return manifest
    }

    /// What a line's key is, read from its bytes.
    enum Line {
        case slot(Int, SlotField), format, appID, numeric, other

        static func kind(_ key: UnsafeBufferPointer<UInt8>) -> Line {
            if let (slot, field) = SlotField.split(key) { return .slot(slot, field) }
            if matches(key, "format") { return .format }
            if matches(key, "app_id") { return .appID }
            return numericRange(key) == nil ? .other : .numeric
        }
    }

    /// One slot's lines as the parse finds them (the first of each key counts): their indices.
    struct SlotLines {
        var version, build, abi, size, sha256, needed: Int?

        mutating func keepFirst(_ field: SlotField, _ index: Int) {
            switch field {
            case .version: if version == nil { version = index }
            case .build: if build == nil { build = index }
            case .abi: if abi == nil { abi = index }
            case .size: if size == nil { size = index }
            case .sha256: if sha256 == nil { sha256 = index }
            case .needed: if needed == nil { needed = index }
            }
        }
    }

    /// The per-slot lines: `current.version`, `previous.sha256`, ...
    enum SlotField {
        case version, build, abi, size, sha256, needed

        /// The slot index (0 current, 1 previous) and field of `key`, if it is a slot line.
        static func split(_ bytes: UnsafeBufferPointer<UInt8>) -> (Int, SlotField)? {
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
            if matches(rest, "version") { return (slot, .version) }
            if matches(rest, "build") { return (slot, .build) }
            if matches(rest, "abi") { return (slot, .abi) }
            if matches(rest, "size") { return (slot, .size) }
            if matches(rest, "sha256") { return (slot, .sha256) }
            if matches(rest, "needed") { return (slot, .needed) }
            return nil
        }
    }

    /// The range of the numeric setting `key` names, or nil when it names none: the numeric
    /// settings (docs/fuzzing.md) are durations up to 2^31 - 1 (milliseconds, or seconds for
    /// `remote.interval_s`) and counts up to a million. A chain of byte comparisons, each
    /// rejected by its length first, rather than a table: the launcher asks for every line,
    /// and a global array of pairs costs its generic metadata and its initialization.
    static func numericRange(_ key: UnsafeBufferPointer<UInt8>) -> ClosedRange<Int>? {
        if matches(key, "trial.tries") || matches(key, "supervise.crash_limit") { return ValueRange.count }
        if matches(key, "remote.interval_s") || matches(key, "remote.deadline_ms")
            || matches(key, "remote.before_start_deadline_ms") || matches(key, "remote.max_staleness_s")
            || matches(key, "remote.retry_floor_s") || matches(key, "remote.splay_s")
            || matches(key, "remote.first_check_s")
            || matches(key, "supervise.grace_ms") || matches(key, "supervise.backoff_initial_ms")
            || matches(key, "supervise.backoff_max_ms") || matches(key, "supervise.backoff_reset_after_ms")
            || matches(key, "supervise.crash_window_ms") || matches(key, "supervise.poll_ms")
            || matches(key, "supervise.start_deadline_ms") || matches(key, "supervise.min_ready_ms")
            || matches(key, "supervise.watchdog_ms") || matches(key, "supervise.probe_interval_ms")
            || matches(key, "supervise.drain_ms") { return ValueRange.duration }
        return nil
    }
}

extension Manifest {
    /// The size and SHA-256 the manifest records for the bundled library `name` (a file of
    /// the bundle's `lib/`: `lib.<name>=<size>,<sha256>`), or nil when it records none.
    public func bundledLibrary(named name: String) -> (size: Int64, sha256: String)? {
        guard let value = settings["lib." + name], let comma = value.utf8.firstIndex(of: 0x2C),
              let size = Int64(Substring(value.utf8[..<comma])) else { return nil }
        let sha256 = String(Substring(value.utf8[value.utf8.index(after: comma)...]))
        return FileDigest.isHexDigest(sha256) ? (size, sha256) : nil
    }

    /// The bundle's directory layout: `bin/`, `lib/`, `slots/<slot>/libAppCore.so`, `manifest`.
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
