import SwitchbackFiles

/// Remembers slot files that were hashed and matched the manifest: one line per file with
/// its path, fingerprint and SHA-256, and — once the file was opened with RTLD_NOW, every
/// symbol bound — a stamp of the libraries it was bound against. Losing it costs one hash
/// and one eager open; it is written atomically without fsync.
public struct VerifiedCache: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// One remembered file.
    public struct Entry: Equatable, Sendable {
        public var file: String
        public var fingerprint: FileFingerprint
        public var sha256: String
        /// `LibraryStamp` of the dependencies the file bound against with RTLD_NOW, if it did.
        public var bound: String?

        public init(file: String, fingerprint: FileFingerprint, sha256: String, bound: String?) {
            self.file = file
            self.fingerprint = fingerprint
            self.sha256 = sha256
            self.bound = bound
        }
    }

    /// The SHA-256 recorded for `file` with exactly this fingerprint, and the stamp of the
    /// libraries it bound against (if it was opened with RTLD_NOW), if any.
    public func lookup(_ file: String, fingerprint: FileFingerprint) -> (sha256: String, bound: String?)? {
        // Only the lines of this file are parsed: the launcher looks up at every start.
        guard let bytes = try? FileSystem.read(path, limit: 64 << 10) else { return nil }
        var prefix = Array(file.utf8)
        prefix.append(0x09)
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            let line = bytes[start..<end]
            if line.starts(with: prefix), let entry = Self.parse(line: line), entry.fingerprint == fingerprint {
                return (entry.sha256, entry.bound)
            }
            start = end + 1
        }
        return nil
    }

    /// Records that `file`, with this fingerprint, hashed to `sha256` (and, with `bound`,
    /// opened with every symbol bound against libraries with that stamp). Best effort.
    public func record(file: String, fingerprint: FileFingerprint, sha256: String, bound: String? = nil) {
        var kept = entries().filter { $0.file != file }
        kept.append(Entry(file: file, fingerprint: fingerprint, sha256: sha256, bound: bound))
        write(Self.serialize(Array(kept.suffix(Self.capacity))))
    }

    /// Records several files at once (the bundled libraries a slot needs), one rewrite of
    /// the file. Best effort.
    public func record(_ new: [Entry]) {
        guard !new.isEmpty else { return }
        var kept = entries().filter { old in !new.contains { $0.file == old.file } }
        kept += new
        write(Self.serialize(Array(kept.suffix(Self.capacity))))
    }

    /// Rewrites the file through its checked directory (made if missing): best effort, and
    /// nothing is written where another user could change the directory.
    private func write(_ bytes: [UInt8]) {
        let (parent, name) = FileSystem.split(path)
        guard let directory = try? FileSystem.directory(parent, what: "state directory", creating: true) else { return }
        try? directory.replace(name, with: bytes, durable: false)
    }

    /// How many files are remembered: both slots and the libraries a bundle carries, with room
    /// for a previous bundle's.
    static let capacity = 48

    func entries() -> [Entry] {
        guard let bytes = try? FileSystem.read(path, limit: 64 << 10) else { return [] }
        return Self.parse(bytes)
    }

    /// The file's text: one tab-separated line per entry.
    public static func serialize(_ entries: [Entry]) -> [UInt8] {
        Array(entries.map { ([$0.file] + $0.fingerprint.fields + [$0.sha256, $0.bound ?? "-"]).joined(separator: "\t") + "\n" }.joined().utf8)
    }

    /// Parses the file. A line that does not read — wrong field count, a number that does not
    /// parse, a size outside `ValueRange.fileSize`, a SHA-256 that is not 64 lowercase hex
    /// digits, or an empty file or stamp — is dropped: it only costs one hash.
    public static func parse(_ bytes: [UInt8]) -> [Entry] {
        bytes.split(separator: 0x0A).compactMap(parse(line:))
    }

    static func parse(line: ArraySlice<UInt8>) -> Entry? {
        // Fields cut by hand into Strings, with no array of slices: the launcher reads its
        // slot's line at every start, and each new generic type costs its metadata.
        var f: [String] = []
        var start = line.startIndex
        for index in line.startIndex...line.endIndex where index == line.endIndex || line[index] == 0x09 {
            f.append(String(decoding: line[start..<index], as: UTF8.self))
            start = index + 1
        }
        guard f.count == 8, !f[0].isEmpty, let device = UInt64(f[1]), let inode = UInt64(f[2]),
              let size = Int64(f[3]), ValueRange.fileSize.contains(size),
              let modified = Int64(f[4]), let changed = Int64(f[5]),
              FileDigest.isHexDigest(f[6]), !f[7].isEmpty else { return nil }
        return Entry(file: f[0],
                     fingerprint: FileFingerprint(device: device, inode: inode, size: size, modified: modified, changed: changed),
                     sha256: f[6], bound: f[7] == "-" ? nil : f[7])
    }
}
