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

    /// The fingerprint of a `stat(2)` result (times in nanoseconds). The arithmetic wraps: a
    /// file dated after 2262 (`touch -d 2300-01-01`, which ext4 stores) would overflow Int64
    /// nanoseconds and trap the launcher; a fingerprint only needs to change when the file does.
    public init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                  modified: Self.nanoseconds(info.st_mtim), changed: Self.nanoseconds(info.st_ctim))
    }

    static func nanoseconds(_ time: timespec) -> Int64 {
        Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
    }

    var fields: [String] { [String(device), String(inode), String(size), String(modified), String(changed)] }
}
