#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The default store: one crash-safe text file per scope in a directory you choose.
///
/// Guarantees:
/// - Every append replaces the file atomically: a temporary file in the same directory
///   is written and `fsync`ed, renamed over the ledger, and the directory is `fsync`ed.
///   After a crash or `kill -9`, readers see the ledger before or after the append,
///   never a mix.
/// - A damaged or foreign file is reported as an ``AppVersionsError`` with code
///   ``AppVersionsError/Code/corruptLedger`` naming the file, never a crash.
/// - ``withExclusiveAccess(to:_:)`` holds an `flock(2)` on a lock file beside the
///   ledger, so two processes (or threads) using one scope take turns. The kernel drops
///   the lock if the holder dies.
///
/// Files: `scope-<name>.ledger` (the ledger), `.lock` and `.tmp` beside it. Names are
/// percent-encoded, so any scope name is safe. The directory is created on the first write.
///
/// ```swift
/// let store = FileLedgerStore(directory: stateDirectory + "/versions")
/// ```
public final class FileLedgerStore: LedgerStore {
    /// The directory that holds the ledger files.
    public let directory: String

    private struct Cached {
        var fingerprint: FileIO.Fingerprint
        var file: LedgerFileFormat
        var entries: [LedgerEntry]
    }

    private let cache = Mutex<[Scope: Cached]>([:])

    /// Creates a store over `directory`; nothing is touched until the first read or write.
    public init(directory: String) {
        self.directory = directory
    }

    /// Creates a store over the directory at a file URL.
    public convenience init(directory: URL) {
        self.init(directory: directory.path)
    }

    /// The path of the ledger file for `scope`.
    public func path(for scope: Scope) -> String {
        directory + "/scope-" + Self.fileName(for: scope) + ".ledger"
    }

    /// Every entry of `scope`, oldest first; empty if its file does not exist yet.
    ///
    /// - Throws: ``AppVersionsError`` with ``AppVersionsError/Code/corruptLedger``,
    ///   ``AppVersionsError/Code/unsupportedLedgerFormat`` or ``AppVersionsError/Code/readFailed``.
    public func entries(in scope: Scope) throws -> [LedgerEntry] {
        let path = path(for: scope)
        return try cache.withLock { cache throws -> [LedgerEntry] in
            try load(scope, path: path, cache: &cache)?.entries ?? []
        }
    }

    /// Appends `entries` to `scope` with one atomic file replacement.
    ///
    /// - Throws: ``AppVersionsError`` with ``AppVersionsError/Code/writeFailed`` (nothing
    ///   was appended), or any error of ``entries(in:)`` if the existing file is damaged.
    public func append(_ entries: [LedgerEntry], to scope: Scope) throws {
        guard !entries.isEmpty else { return }
        let path = path(for: scope)
        try cache.withLock { cache throws in
            var current = try load(scope, path: path, cache: &cache)
            // Take the buffers out of the cache so that appending does not copy them.
            cache[scope] = nil
            var file = LedgerFileFormat()
            var all: [LedgerEntry] = []
            if var owned = current {
                current = nil
                swap(&file, &owned.file)
                swap(&all, &owned.entries)
            }
            file.append(entries)
            do throws(FileIO.Failure) {
                let opened = try FileIO.makeDirectories(directory)
                try FileIO.replaceAtomically(path, with: file.bytes, in: opened)
                guard let fingerprint = try FileIO.fingerprint(of: path) else { return }
                all.append(contentsOf: entries)
                cache[scope] = Cached(fingerprint: fingerprint, file: file, entries: all)
            } catch let failure {
                throw AppVersionsError(
                    .writeFailed,
                    failure.refusal ?? "Could not write the ledger for scope \"\(scope.name)\" at \(failure.path): \(failure.reason); check that the directory is writable and the disk is not full.",
                    path: failure.path, subject: scope.name, errno: failure.errno
                )
            }
        }
    }

    /// Holds an exclusive `flock(2)` on the scope's lock file while `body` runs.
    ///
    /// - Throws: ``AppVersionsError`` with ``AppVersionsError/Code/writeFailed`` if the
    ///   lock file cannot be created, or whatever `body` throws.
    public func withExclusiveAccess<Result>(to scope: Scope, _ body: () throws -> Result) throws -> Result {
        let lockPath = directory + "/scope-" + Self.fileName(for: scope) + ".lock"
        let descriptor: Int32
        do throws(FileIO.Failure) {
            descriptor = try FileIO.lockExclusively(lockPath, in: try FileIO.makeDirectories(directory))
        } catch {
            throw AppVersionsError(
                .writeFailed,
                error.refusal ?? "Could not lock the ledger for scope \"\(scope.name)\" at \(error.path): \(error.reason); check that the directory is writable.",
                path: error.path, subject: scope.name, errno: error.errno
            )
        }
        defer { FileIO.unlock(descriptor) }
        return try body()
    }

    /// Deletes the ledger of `scope`, as if it had never been written.
    ///
    /// - Throws: ``AppVersionsError`` with ``AppVersionsError/Code/writeFailed``.
    public func remove(_ scope: Scope) throws {
        let path = path(for: scope)
        try cache.withLock { cache throws in
            cache[scope] = nil
            do throws(FileIO.Failure) {
                try FileIO.remove(path)
            } catch {
                throw AppVersionsError(
                    .writeFailed,
                    error.refusal ?? "Could not remove the ledger at \(path): \(error.reason); check the directory's permissions.",
                    path: path, subject: scope.name, errno: error.errno
                )
            }
        }
    }

    /// Reads the file unless the cache still matches it.
    private func load(_ scope: Scope, path: String, cache: inout [Scope: Cached]) throws -> Cached? {
        let bytes: [UInt8]
        let fingerprint: FileIO.Fingerprint
        do throws(FileIO.Failure) {
            guard let found = try FileIO.fingerprint(of: path) else {
                cache[scope] = nil
                return nil
            }
            if let cached = cache[scope], cached.fingerprint == found { return cached }
            guard let read = try FileIO.readFile(atPath: path) else {
                cache[scope] = nil
                return nil
            }
            bytes = read
            fingerprint = found
        } catch let failure {
            throw AppVersionsError(
                .readFailed,
                "Could not read the ledger for scope \"\(scope.name)\" at \(failure.path): \(failure.reason); check the file's permissions.",
                path: failure.path, subject: scope.name, errno: failure.errno
            )
        }
        let (file, entries) = try LedgerFileFormat.parse(bytes, path: path, scope: scope)
        let loaded = Cached(fingerprint: fingerprint, file: file, entries: entries)
        cache[scope] = loaded
        return loaded
    }

    /// Percent-encodes every byte outside `[A-Za-z0-9._-]`, so distinct scopes get distinct, safe names.
    static func fileName(for scope: Scope) -> String {
        var result = ""
        for byte in scope.name.utf8 {
            switch byte {
            case 48...57, 65...90, 97...122, 45, 46, 95:
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return result
    }
}
