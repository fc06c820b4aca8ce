#if canImport(Glibc)
import Glibc
#endif

/// A slot file opened once and checked through its descriptor: what `SlotVerifier` checked
/// is what `LoadedSlot` maps (through `/proc/self/fd/N` of this very descriptor), so the
/// file cannot be swapped between the check and the load. Closed when the last copy goes.
public final class SlotFile: Sendable, Equatable {
    /// The open, read-only descriptor.
    public let descriptor: Int32
    /// The path it was opened by, symbolic links resolved.
    public let resolvedPath: String

    init(descriptor: Int32, resolvedPath: String) {
        self.descriptor = descriptor
        self.resolvedPath = resolvedPath
    }

    deinit { close(descriptor) }

    public static func == (lhs: SlotFile, rhs: SlotFile) -> Bool { lhs === rhs }

    /// Opens `path` the strict way: every directory and link on the way checked
    /// (`StrictModes.resolve`), the resolved file opened with `O_NOFOLLOW`, and the
    /// descriptor checked with `fstat` (a regular file owned by this user or root, not
    /// writable by group or others). Returns nil when it does not exist; throws
    /// `.slotNotRegularFile` or `.insecurePermissions` with a sentence naming `what`.
    static func open(_ path: String, what: String) throws(SwitchbackError) -> (file: SlotFile, info: stat)? {
        guard let resolved = try StrictModes.resolve(path, what: what),
              let fd = try StrictModes.openNoFollow(resolved, what: what, flags: O_RDONLY | O_NONBLOCK) else { return nil }
        let file = SlotFile(descriptor: fd, resolvedPath: resolved)
        var info = stat()
        if fstat(fd, &info) != 0 { throw .system("Inspecting", path: path, errno: errno) }
        guard FileMode.type(info) == FileMode.regular else {
            throw SwitchbackError(.slotNotRegularFile, "The \(what) at \(path) is not a regular file; rebuild the bundle with scripts/bundle.", path: path)
        }
        try StrictModes.checkOwnerAndMode(info, path: resolved, what: what)
        return (file, info)
    }

    /// Checks each library in `paths` (absolute, as the manifest lists them) before any is
    /// opened: the directories and links on the way, and the file itself, by the strict
    /// rules. Returns those that exist; throws `.insecurePermissions` for the first that
    /// another user could change, or one that is not an absolute path.
    ///
    /// A library of the bundle's own `lib/` that the manifest records (`bundled`, given the
    /// library's file name) must also match that record's size and SHA-256, like a slot:
    /// a modified runtime library is never loaded. Throws `.libraryMismatch` naming it.
    /// A bundled library hashed once is remembered in `cache` by its fingerprint, as a slot
    /// is: `rollbackctl status` checks the slot that does not run too, at every call.
    static func checkLibraries(_ paths: [String], neededBy slot: String,
                               bundled: (String) -> (size: Int64, sha256: String)? = { _ in nil },
                               cache: VerifiedCache? = nil) throws(SwitchbackError) -> [String] {
        var remembered: [VerifiedCache.Entry]?
        var hashed: [VerifiedCache.Entry] = []
        defer { cache?.record(hashed) }
        // Most libraries share one or two directories: each directory is walked once.
        var directories: [String: String?] = [:]
        var present: [String] = []
        for path in paths {
            let what = "\(slot)'s library"
            guard path.utf8.first == 0x2F else {
                throw SwitchbackError(.insecurePermissions, "The manifest lists the \(what) '\(path)' as a relative path; refusing to search for it: rebuild the bundle with scripts/bundle.", path: path)
            }
            let listed = FileSystem.parentDirectory(of: path)
            let directory: String?
            if let known = directories[listed] {
                directory = known
            } else {
                directory = try StrictModes.resolveDirectory(listed, what: "directory of the \(what)")
                directories[listed] = directory
            }
            guard let directory, let (resolved, info) = try libraryFile(in: directory, named: lastComponent(of: path), what: what) else { continue }
            guard FileMode.type(info) == FileMode.regular else {
                throw SwitchbackError(.insecurePermissions, "The \(what) \(resolved) is not a regular file; refusing to load it: reinstall it or rebuild the bundle with scripts/bundle.", path: path)
            }
            try StrictModes.checkOwnerAndMode(info, path: resolved, what: what)
            if let record = bundled(lastComponent(of: path)) {
                let fingerprint = FileFingerprint(info)
                if remembered == nil { remembered = cache?.entries() ?? [] }
                if !remembered!.contains(where: { $0.file == resolved && $0.fingerprint == fingerprint && $0.sha256 == record.sha256 }) {
                    try checkBundledLibrary(resolved, listedAs: path, info: info, record: record, neededBy: slot)
                    hashed.append(VerifiedCache.Entry(file: resolved, fingerprint: fingerprint, sha256: record.sha256, bound: nil))
                }
            }
            present.append(path)
        }
        return present
    }

    /// Walks and checks the directory of each library in `list` (the manifest's comma-separated
    /// `needed`, absolute paths) as `checkLibraries` does, with the same sentences
    /// (`.insecurePermissions`), for a slot whose libraries are remembered by their stamp:
    /// the stamp covers the files (a chmod of one changes its ctime), not the directories
    /// that hold them, so `chmod 777 lib` must be seen here, at every start, or a start,
    /// `status` and a fresh state directory would disagree about the same bundle. A few
    /// `lstat`s: libraries in a row in one directory are walked once, and within a start
    /// `TrustedDirectories` remembers what passed.
    static func checkLibraryDirectories(list: String, neededBy slot: String) throws(SwitchbackError) {
        // One pass over the bytes, a String made only for a directory not seen just before:
        // a generic split and a String per library cost more than the lstat they lead to.
        var directories: [String] = []
        var text = list
        text.withUTF8 { bytes in
            var start = 0, previous = 0..<0
            while start < bytes.count {
                var end = start, slash = -1
                while end < bytes.count, bytes[end] != 0x2C {
                    if bytes[end] == 0x2F { slash = end }
                    end += 1
                }
                defer { start = end + 1 }
                guard end > start, bytes[start] == 0x2F, slash >= start else { continue }
                let parent = start..<max(slash, start + 1)  // "/lib" of "/lib/x.so"; "/" of "/x.so"
                if parent.count == previous.count,
                   UnsafeBufferPointer(rebasing: bytes[parent]).elementsEqual(UnsafeBufferPointer(rebasing: bytes[previous])) { continue }
                previous = parent
                directories.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[parent]), as: UTF8.self))
            }
        }
        for directory in directories {
            _ = try StrictModes.resolveDirectory(directory, what: "directory of the \(slot)'s library")
        }
    }

    /// `name` in the checked `directory`, links followed (each link checked; a target in
    /// another directory is walked by `StrictModes.resolve`). Nil when missing.
    private static func libraryFile(in directory: String, named name: String, what: String) throws(SwitchbackError) -> (String, stat)? {
        var path = directory + "/" + name
        for _ in 0...StrictModes.maximumLinks {
            guard let info = try StrictModes.linkStatus(path) else { return nil }
            guard FileMode.type(info) == FileMode.symbolicLink else { return (path, info) }
            if info.st_uid != geteuid() && info.st_uid != 0 {
                throw SwitchbackError(.insecurePermissions, "The symbolic link \(path) on the way to the \(what) is owned by another user (owner uid \(info.st_uid)); refusing to follow it: remove it or run 'chown -h \(geteuid()) \(path)'.", path: path)
            }
            guard let target = StrictModes.readLink(path) else { return nil }
            if !target.utf8.contains(0x2F) {
                path = directory + "/" + target  // the common case: libfoo.so.6 -> libfoo.so.6.0.33
                continue
            }
            guard let resolved = try StrictModes.resolve(target.utf8.first == 0x2F ? target : directory + "/" + target, what: what),
                  let final = try StrictModes.linkStatus(resolved) else { return nil }
            return (resolved, final)
        }
        throw SwitchbackError(.insecurePermissions, "The \(what) \(directory)/\(name) goes through more than \(StrictModes.maximumLinks) symbolic links; refusing to follow them: point to the file directly.", path: path)
    }

    /// Checks a bundled library's size and SHA-256 against its manifest record.
    private static func checkBundledLibrary(_ path: String, listedAs listed: String, info: stat,
                                            record: (size: Int64, sha256: String), neededBy slot: String) throws(SwitchbackError) {
        func mismatch(_ what: String) -> SwitchbackError {
            SwitchbackError(.libraryMismatch, "The bundled library \(listed), which the \(slot) needs, \(what); refusing to load it: rebuild the bundle with scripts/bundle.", path: listed)
        }
        if Int64(info.st_size) != record.size {
            throw mismatch("has \(info.st_size) bytes where the manifest records \(record.size)")
        }
        if try FileDigest.hexDigest(ofFile: path) != record.sha256 {
            throw mismatch("does not match the manifest's SHA-256 (it was modified after bundling)")
        }
    }

    private static func lastComponent(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: 0x2F) else { return path }
        return String(Substring(path.utf8[path.utf8.index(after: slash)...]))
    }

    /// Whether the file starts with the ELF magic (read with `pread`, offset untouched).
    func hasELFMagic() -> Bool {
        var magic = [UInt8](repeating: 0, count: 4)
        let (count, _) = magic.withUnsafeMutableBytes { buffer in retryingInterrupts { pread(descriptor, buffer.baseAddress, 4, 0) } }
        return count == 4 && magic == [0x7F, 0x45, 0x4C, 0x46]
    }
}
