/// Remembers slot files that were hashed and matched the manifest: one line per file with
/// its path, fingerprint and SHA-256, and — once the file was opened with RTLD_NOW, every
/// symbol bound — a stamp of the libraries it was bound against. Losing it costs one hash
/// and one eager open; it is written atomically without fsync.
public struct VerifiedCache: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    struct Entry: Equatable {
        var file: String
        var fingerprint: FileFingerprint
        var sha256: String
        /// `LibraryStamp` of the dependencies the file bound against with RTLD_NOW, if it did.
        var bound: String?
    }

    /// The SHA-256 recorded for `file` with exactly this fingerprint, and the stamp of the
    /// libraries it bound against (if it was opened with RTLD_NOW), if any.
    public func lookup(_ file: String, fingerprint: FileFingerprint) -> (sha256: String, bound: String?)? {
        entries().first { $0.file == file && $0.fingerprint == fingerprint }.map { ($0.sha256, $0.bound) }
    }

    /// Records that `file`, with this fingerprint, hashed to `sha256` (and, with `bound`,
    /// opened with every symbol bound against libraries with that stamp). Best effort.
    public func record(file: String, fingerprint: FileFingerprint, sha256: String, bound: String? = nil) {
        var kept = entries().filter { $0.file != file }
        kept.append(Entry(file: file, fingerprint: fingerprint, sha256: sha256, bound: bound))
        let text = kept.suffix(8).map { ([$0.file] + $0.fingerprint.fields + [$0.sha256, $0.bound ?? "-"]).joined(separator: "\t") + "\n" }.joined()
        try? FileSystem.createDirectory(FileSystem.parentDirectory(of: path))
        try? FileSystem.replace(path, with: Array(text.utf8), durable: false)
    }

    func entries() -> [Entry] {
        guard let bytes = try? FileSystem.read(path, limit: 64 << 10) else { return [] }
        return bytes.split(separator: 0x0A).compactMap { line in
            let f = line.split(separator: 0x09, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            guard f.count == 8, let device = UInt64(f[1]), let inode = UInt64(f[2]), let size = Int64(f[3]),
                  let modified = Int64(f[4]), let changed = Int64(f[5]) else { return nil }
            return Entry(file: f[0],
                         fingerprint: FileFingerprint(device: device, inode: inode, size: size, modified: modified, changed: changed),
                         sha256: f[6], bound: f[7] == "-" ? nil : f[7])
        }
    }
}
