#if canImport(Glibc)
import Glibc
#endif

/// A cheap identity of a file's content: device, inode, size, mtime and ctime. Any write,
/// replacement or `touch` changes it, so a file whose fingerprint matches one recorded
/// after hashing need not be hashed again.
public struct FileFingerprint: Sendable, Equatable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var modified: Int64
    public var changed: Int64

    public init(device: UInt64, inode: UInt64, size: Int64, modified: Int64, changed: Int64) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modified = modified
        self.changed = changed
    }

    /// The fingerprint of a `stat(2)` result (times in nanoseconds).
    public init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                  modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                  changed: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))
    }

    var fields: [String] { [String(device), String(inode), String(size), String(modified), String(changed)] }
}
