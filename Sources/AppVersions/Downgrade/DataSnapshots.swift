#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Copies, moves and restores data directories for downgrades.
///
/// Snapshots recreate the directories and copy regular files and symbolic links, except
/// that the regular files the ``SnapshotMethod`` names are hard-linked: only the app
/// knows which files it replaces (write and rename) rather than modifies in place, and
/// only those are safe to share with a snapshot. Restores always copy.
enum DataSnapshots {
    static func failure(_ what: String, _ path: String, _ error: any Error) -> AppVersionsError {
        AppVersionsError(
            .downgradeFailed,
            "Could not \(what) at \(path): \(error); check the disk and permissions, then start again.",
            path: path, underlying: error
        )
    }

    /// Refuses, before anything is written, a directory among `paths` that is a link or that
    /// another user could change, and one whose holding directory is (the file layer's
    /// check, `CheckedDirectory`; missing holders are made with `mkdirat` inside checked
    /// directories). Below directories that pass, no other user can plant a link, so the
    /// copies and renames that follow write only where they name.
    @discardableResult
    static func checkTrusted(_ paths: [String]) throws -> [(holder: CheckedDirectory, name: String)] {
        var checked: [(holder: CheckedDirectory, name: String)] = []
        for path in paths {
            let absolute = FileIO.absolute(normalized(path))
            let name = FileIO.fileName(of: absolute)
            do {
                let holder = try CheckedDirectory.open(FileIO.parentDirectory(of: absolute), what: "data directory", creating: 0o755,
                                                       policy: .stickyHolder)
                if holder.status(of: name) != nil { _ = try holder.subdirectory(name) }
                checked.append((holder, name))
            } catch {
                throw AppVersionsError(.downgradeFailed, error.message, path: error.path, underlying: error)
            }
        }
        return checked
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// A name safe to use as one path component.
    static func component(_ text: String) -> String {
        String(text.unicodeScalars.map { scalar -> Character in
            let isSafe = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z")
                || (scalar >= "0" && scalar <= "9") || scalar == "-" || scalar == "." || scalar == "_"
            return isSafe ? Character(scalar) : "_"
        })
    }

    /// Copies the tree at `source` to `destination` (which must not exist), skipping
    /// `excluded` and symbolic links' targets (links are copied as links). Regular files
    /// that `method` links are hard-linked instead, or copied if the system refuses.
    static func copyTree(_ source: String, to destination: String, excluding excluded: String?, method: SnapshotMethod) throws {
        try copyTree(source, to: destination, excluding: excluded, method: method, relativePath: "")
    }

    /// `copyTree` for the directory at `relativePath` ("" for the top) below the tree's root.
    private static func copyTree(_ source: String, to destination: String, excluding excluded: String?, method: SnapshotMethod, relativePath: String) throws {
        let manager = FileManager.default
        try manager.createDirectory(atPath: destination, withIntermediateDirectories: true)
        for name in try manager.contentsOfDirectory(atPath: source) {
            let from = source + "/" + name
            if let excluded, normalized(from) == normalized(excluded) { continue }
            let to = destination + "/" + name
            let relative = relativePath.isEmpty ? name : relativePath + "/" + name
            var info = stat()
            guard lstat(from, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                try copyTree(from, to: to, excluding: excluded, method: method, relativePath: relative)
            case S_IFREG:
                if method.links(relative), try hardLink(from, to: to) { continue }
                try manager.copyItem(atPath: from, toPath: to)
            case S_IFLNK:
                try manager.copyItem(atPath: from, toPath: to)
            default:
                continue
            }
        }
    }

    /// Hard-links `from` at `to`. False, with nothing created, when this file system or
    /// file cannot be linked there (`EXDEV`, `EPERM`, `EMLINK`): the caller copies it.
    static func hardLink(_ from: String, to: String) throws(FileIO.Failure) -> Bool {
        while link(from, to) != 0 {
            let code = errno
            switch code {
            case EINTR:
                continue
            case EXDEV, EPERM, EMLINK:
                return false
            default:
                throw FileIO.Failure(operation: "link", path: from, errno: code)
            }
        }
        return true
    }

    static func normalized(_ path: String) -> String {
        var result = path
        while result.count > 1 && result.hasSuffix("/") { result.removeLast() }
        return result
    }

    /// Removes `path` and everything under it, if it exists.
    static func removeTree(_ path: String) throws {
        guard exists(path) else { return }
        try checkTrusted([path])
        try FileManager.default.removeItem(atPath: path)
    }

    /// Renames `from` to `to` atomically (same file system), creating `to`'s parent.
    static func move(_ from: String, to: String) throws {
        // Both holders checked (and `to`'s made) by the file layer; the rename is relative
        // to their descriptors (`renameat`), which moves a link itself, never its target.
        let checked = try checkTrusted([from, to])
        let (source, target) = (checked[0], checked[1])
        do {
            try source.holder.rename(source.name, to: target.name, in: target.holder)
        } catch {
            let code = error.errno ?? EIO
            throw AppVersionsError(
                .downgradeFailed,
                "Could not move \(from) to \(to): \(AppVersionsError.describe(errno: code)); keep the snapshot area on the same file system as the data directory.",
                path: from, errno: code
            )
        }
        do { try target.holder.sync() } catch { throw FileIO.Failure(error, operation: "fsync") }
    }

    /// Takes a snapshot of `data` at `path`: copies (or, as `method` says, hard-links)
    /// into `path.partial`, then renames, so a snapshot that exists is whole.
    static func snapshot(_ data: String, at path: String, excluding excluded: String?, method: SnapshotMethod) throws {
        let partial = path + ".partial"
        try checkTrusted([data, path, partial])
        do {
            try removeTree(partial)
            if exists(data) {
                try copyTree(data, to: partial, excluding: excluded, method: method)
            } else {
                try FileIO.makeDirectories(partial)
            }
        } catch {
            throw failure("take a snapshot of \(data)", partial, error)
        }
        try move(partial, to: path)
    }

    /// Replaces `data` with a copy of `snapshot`, moving the current data set to
    /// `archive`. Repeatable: run again after a crash, it finishes the same restore.
    ///
    /// The copy is staged whole beside `data` before anything moves; then `data` goes to
    /// `archive` and the staged copy takes its place, each by one rename. So at every
    /// moment `data` is the old data set, absent, or the whole restored one, and which of
    /// these it is follows from what exists:
    /// - no archive: nothing moved yet; (re)stage and go on;
    /// - an archive and a staged copy: the copy is whole but not in place; a `data` that
    ///   exists now was made after the crash (an app that creates its directory at start):
    ///   it is set aside next to the archive, never deleted, and the copy moves in;
    /// - an archive and no staged copy: done.
    static func restore(_ data: String, from snapshot: String, archive: String) throws {
        let staging = data + ".appversions-restoring"
        try checkTrusted([data, snapshot, archive, staging])
        if !exists(archive) {
            do {
                try removeTree(staging)
                // Always a copy: the restored files must not be shared with the snapshot.
                try copyTree(snapshot, to: staging, excluding: nil, method: .copy)
                try FileIO.fsyncDirectory(FileIO.parentDirectory(of: staging))
            } catch {
                throw failure("copy the snapshot \(snapshot)", staging, error)
            }
            if exists(data) { try move(data, to: archive) }
        } else if !exists(staging) {
            return  // Already restored; only the record was missing.
        }
        if exists(data) {
            // Made after the crash, between the two renames. Empty in practice; kept anyway.
            if rmdir(data) != 0 { try move(data, to: archive + ".made-during-restore") }
        }
        try move(staging, to: data)
    }

    /// Moves `data` to `archive` and leaves an empty directory in its place. Repeatable.
    static func archive(_ data: String, to archive: String) throws {
        try checkTrusted([data, archive])
        if exists(data) && !exists(archive) {
            try move(data, to: archive)
        }
        do {
            try FileIO.makeDirectories(data)
        } catch {
            throw failure("recreate the data directory", data, error)
        }
    }
}
