#if canImport(Glibc)
import Glibc
#endif

/// Checks a slot's file before anything maps it: every directory and symbolic link on the
/// way, and the file itself, owned by this user or root and not writable by others
/// (`StrictModes`); a regular file as long as the manifest says (a truncated .so crashes
/// `dlopen` with SIGBUS), an ELF object, and with the manifest's SHA-256 — hashed only when
/// its fingerprint is not in the verified cache; and the libraries the manifest says it
/// needs, by the same strict rules, before any of them is opened.
///
/// The file is opened once: every check after the path walk reads the open descriptor, and
/// `LoadedSlot.load(_:verified:...)` maps that same descriptor, so a file swapped after the
/// check is never the one loaded.
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
        /// The absolute path of the slot (as the bundle names it; `file` has it resolved).
        public var path: String
        /// True when the file was hashed now (its fingerprint was not cached).
        public var wasHashed: Bool
        /// The fingerprint it was verified with.
        public var fingerprint: FileFingerprint
        /// The stamp of the libraries this very file bound against with RTLD_NOW, if it did.
        public var boundLibraries: String?
        /// The open descriptor every check read; `LoadedSlot` maps this, not the path.
        public var file: SlotFile
        /// The libraries of the manifest's `needed` list that exist and passed the strict
        /// check; `LoadedSlot` preloads only these.
        public var libraries: [String] { allListed?.nonEmptyFields(separatedBy: 0x2C) ?? checked }
        /// `LibraryStamp.of` the manifest's libraries now (nil when one is missing).
        public var libraryStamp: String?
        /// The manifest's whole list when every library on it passed (checked when the stamp
        /// was recorded); then `libraries` splits it only if asked, which a lazy open never does.
        var allListed: String?
        /// Otherwise the libraries that passed the check now.
        var checked: [String]
    }

    /// Checks `slot`; throws a `slot...` error (or `.insecurePermissions`) whose message
    /// names the slot, the path, what is wrong and what to do.
    public func verify(_ slot: BuildSlot) throws(SwitchbackError) -> Verified {
        let path = Manifest.slotPath(bundleRoot: bundleRoot, slot: slot)
        let record = manifest[slot]
        // Failure sentences are built only on failure: this runs at every start.
        func failure(_ code: SwitchbackError.Code, _ what: String) -> SwitchbackError {
            SwitchbackError(code, "The \(slot.rawValue) slot at \(path) \(what).", path: path)
        }
        guard let (file, info) = try SlotFile.open(path, what: slot == .current ? "current slot" : "previous slot") else {
            throw failure(.slotMissing, "is missing; rebuild the bundle with scripts/bundle")
        }
        let size = Int64(info.st_size)
        if size < record.size {
            throw failure(.slotTruncated, "is truncated: \(size) of \(record.size) bytes; rebuild it with scripts/bundle")
        }
        let fingerprint = FileFingerprint(info)
        let cached = cache?.lookup(path, fingerprint: fingerprint)
        // A file whose fingerprint is remembered is the very file that was hashed after it
        // passed this check: its magic is not read again.
        if cached == nil, !file.hasELFMagic() {
            throw failure(.slotNotELF, "is not an ELF shared object; rebuild it with scripts/bundle")
        }
        if size != record.size {
            throw failure(.slotSizeMismatch, "has \(size) bytes where the manifest records \(record.size); rebuild the bundle with scripts/bundle")
        }
        // The libraries this file bound against once, unchanged since (same inode, size, mtime
        // and ctime, so no chmod, chown or replacement either), were strict-checked when that
        // stamp was recorded: checked once, remembered by fingerprint, like the hash. Their
        // directories are not in the stamp: those are checked at every start (a few lstats).
        let stamp = LibraryStamp.of(list: record.neededList)
        var allListed: String?, checked: [String] = []
        if let cached, cached.sha256 == record.sha256, let bound = cached.bound, bound == stamp {
            // The files are as they were checked; their directories are checked again.
            try SlotFile.checkLibraryDirectories(list: record.neededList, neededBy: "\(slot.rawValue) slot")
            allListed = record.neededList
        } else {
            checked = try SlotFile.checkLibraries(record.needed, neededBy: "\(slot.rawValue) slot", bundled: manifest.bundledLibrary(named:), cache: cache)
        }
        if let cached, cached.sha256 == record.sha256 {
            return Verified(path: path, wasHashed: false, fingerprint: fingerprint, boundLibraries: cached.bound,
                            file: file, libraryStamp: stamp, allListed: allListed, checked: checked)
        }
        let digest = try FileDigest.hexDigest(ofDescriptor: file.descriptor, path: path)
        guard digest == record.sha256 else {
            throw failure(.slotHashMismatch, "does not match the manifest's SHA-256 (it was modified after bundling); rebuild the bundle with scripts/bundle")
        }
        cache?.record(file: path, fingerprint: fingerprint, sha256: digest)
        return Verified(path: path, wasHashed: true, fingerprint: fingerprint, boundLibraries: nil, file: file,
                        libraryStamp: stamp, allListed: allListed, checked: checked)
    }
}
