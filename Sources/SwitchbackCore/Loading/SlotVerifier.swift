#if canImport(Glibc)
import Glibc
#endif

/// Checks a slot's file before anything maps it: present, a regular file nobody else can
/// write, as long as the manifest says (a truncated .so crashes `dlopen` with SIGBUS), an
/// ELF object, and with the manifest's SHA-256 — hashed only when its fingerprint is not
/// in the verified cache.
public struct SlotVerifier: Sendable {
    public let bundleRoot: String
    public let manifest: Manifest
    /// Nil when there is no trusted state directory to remember verified files in.
    public let cache: VerifiedCache?

    public init(bundleRoot: String, manifest: Manifest, cache: VerifiedCache?) {
        self.bundleRoot = bundleRoot
        self.manifest = manifest
        self.cache = cache
    }

    /// The outcome of a successful check.
    public struct Verified: Sendable, Equatable {
        /// The absolute path to load.
        public var path: String
        /// True when the file was hashed now (its fingerprint was not cached).
        public var wasHashed: Bool
        /// The fingerprint it was verified with.
        public var fingerprint: FileFingerprint
        /// The stamp of the libraries this very file bound against with RTLD_NOW, if it did.
        public var boundLibraries: String?
    }

    /// Checks `slot`; throws a `slot...` error whose message names the slot, the path, what
    /// is wrong and what to do.
    public func verify(_ slot: BuildSlot) throws(SwitchbackError) -> Verified {
        let path = Manifest.slotPath(bundleRoot: bundleRoot, slot: slot)
        let record = manifest[slot]
        let name = "The \(slot.rawValue) slot at \(path)"
        func failure(_ code: SwitchbackError.Code, _ what: String) -> SwitchbackError {
            SwitchbackError(code, "\(name) \(what).", path: path)
        }
        guard let info = try FileSystem.status(path) else {
            throw failure(.slotMissing, "is missing; rebuild the bundle with scripts/bundle")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw failure(.slotNotRegularFile, "is not a regular file; rebuild the bundle with scripts/bundle")
        }
        try StateDirectory.checkNotWritableByOthers(info, path: path, what: "\(slot.rawValue) slot", fix: "chmod go-w \(path)")
        let directory = FileSystem.parentDirectory(of: path)
        if let parent = try FileSystem.status(directory) {
            try StateDirectory.checkNotWritableByOthers(parent, path: directory, what: "\(slot.rawValue) slot's directory", fix: "chmod go-w \(directory)")
        }
        let size = Int64(info.st_size)
        if size < record.size {
            throw failure(.slotTruncated, "is truncated: \(size) of \(record.size) bytes; rebuild it with scripts/bundle")
        }
        if !Self.hasELFMagic(path) {
            throw failure(.slotNotELF, "is not an ELF shared object; rebuild it with scripts/bundle")
        }
        if size != record.size {
            throw failure(.slotSizeMismatch, "has \(size) bytes where the manifest records \(record.size); rebuild the bundle with scripts/bundle")
        }
        let fingerprint = FileFingerprint(info)
        if let cached = cache?.lookup(path, fingerprint: fingerprint), cached.sha256 == record.sha256 {
            return Verified(path: path, wasHashed: false, fingerprint: fingerprint, boundLibraries: cached.bound)
        }
        let digest = try SHA256.hexDigest(ofFile: path)
        guard digest == record.sha256 else {
            throw failure(.slotHashMismatch, "does not match the manifest's SHA-256 (it was modified after bundling); rebuild the bundle with scripts/bundle")
        }
        cache?.record(file: path, fingerprint: fingerprint, sha256: digest)
        return Verified(path: path, wasHashed: true, fingerprint: fingerprint, boundLibraries: nil)
    }

    static func hasELFMagic(_ path: String) -> Bool {
        let (fd, _) = retryingInterrupts { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var magic = [UInt8](repeating: 0, count: 4)
        let (count, _) = magic.withUnsafeMutableBytes { buffer in retryingInterrupts { read(fd, buffer.baseAddress, 4) } }
        return count == 4 && magic == [0x7F, 0x45, 0x4C, 0x46]
    }
}
