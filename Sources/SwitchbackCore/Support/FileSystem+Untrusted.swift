#if canImport(Glibc)
import Glibc
#endif

extension FileSystem {
    /// Reads the file `name` in `directory` without trusting either: for a state directory that
    /// failed the strict checks, which a start reads only to honour a rejection it records
    /// (`StartState`). Neither the directory nor the file may be a symbolic link (each is
    /// opened with `O_NOFOLLOW`, the file relative to the directory's descriptor, so the file
    /// read is in the directory opened); only a regular file owned by this user or root is
    /// read, at most `limit` bytes; nothing is created or written. Nil when any of that fails or the file does not exist.
    static func readUntrusted(_ name: String, in directory: String, limit: Int = 64 << 10) -> [UInt8]? {
        let (directoryFD, _) = retryingInterrupts { open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        guard directoryFD >= 0 else { return nil }
        defer { close(directoryFD) }
        // O_NONBLOCK: a FIFO put in place of the file must not hang the open.
        let (fd, _) = retryingInterrupts { openat(directoryFD, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        // Another account's file is its words, not this user's: it decides nothing. This
        // user's own file (in a directory others could change, or one its group could write)
        // may record a rejection this user made.
        guard fstat(fd, &info) == 0, FileMode.type(info) == FileMode.regular,
              info.st_uid == geteuid() || info.st_uid == 0 else { return nil }
        return try? readToEnd(fd, path: directory + "/" + name, limit: limit, regularFileSize: Int(info.st_size))
    }
}
