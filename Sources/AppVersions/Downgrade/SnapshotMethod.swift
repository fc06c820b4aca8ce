/// How a snapshot of a data directory takes each regular file: a copy, or a hard link.
///
/// A hard link costs one directory entry instead of the file's bytes, but the snapshot
/// and the data directory then share the file: a change made *in place* (opening the
/// file for writing, appending, `truncate`, `chmod`, a database updating its pages)
/// changes the snapshot too, and the downgrade would restore the changed file. A file
/// that is only ever *replaced* (a new file is written, then renamed over the old one)
/// is safe to link: the rename gives the data directory a new file and leaves the
/// snapshot holding the old one.
///
/// So link only the files your app and every migration step replace, never modify:
///
/// ```swift
/// migrator.snapshotMethod = .hardLink(where: { path in
///     path.hasPrefix("attachments/") || path == "notes.json"   // written to a temporary file, then renamed
/// })
/// ```
///
/// Directories are always created anew and symbolic links copied as links. When the
/// system refuses a link (`EXDEV`: another file system; `EPERM`: the file system has no
/// hard links, or `fs.protected_hardlinks` forbids it; `EMLINK`: too many links), that
/// file is copied instead. Restoring a snapshot always copies, so the snapshot stays
/// intact after a restore.
public struct SnapshotMethod: Sendable {
    /// Says, for a regular file's path relative to the data directory ('/'-separated, no
    /// leading '/', such as `attachments/2024/photo.jpg`), whether to hard-link it.
    /// Nil: copy every file.
    let linksFile: (@Sendable (_ relativePath: String) -> Bool)?

    /// Copies every file (the default): safe whatever the app does to its files.
    public static let copy = SnapshotMethod(linksFile: nil)

    /// Hard-links every regular file. Only for an app whose every file is replaced,
    /// never modified in place; see ``SnapshotMethod``.
    public static let hardLinkAll = SnapshotMethod(linksFile: { _ in true })

    /// Hard-links the regular files for which `isReplacedOnly` returns true and copies
    /// the rest.
    ///
    /// - Parameter isReplacedOnly: Called with each regular file's path relative to the
    ///   data directory, '/'-separated (such as `attachments/photo.jpg`); return true
    ///   only for a file that is always replaced (written anew, then renamed over),
    ///   never modified in place.
    public static func hardLink(where isReplacedOnly: @escaping @Sendable (_ relativePath: String) -> Bool) -> SnapshotMethod {
        SnapshotMethod(linksFile: isReplacedOnly)
    }

    /// Whether the file at `relativePath` is to be hard-linked.
    func links(_ relativePath: String) -> Bool {
        linksFile?(relativePath) ?? false
    }
}
