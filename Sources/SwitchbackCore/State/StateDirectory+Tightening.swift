#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

extension StateDirectory {
    /// Takes group write off this user's own state directory and its files, as every start of
    /// the launcher does before it reads them: what the kubelet's `fsGroup` pass (g+rw on
    /// files, g+rwxs on directories) gave a group whose members no file lists.
    ///
    /// Only when the directory passed the strict checks, is owned by this user and its group
    /// may write it (one `lstat` otherwise, at every start). Then, in this order: the `lock`
    /// file loses group write (`fchmod`: its content is never read); under the lock, every
    /// other regular file of this user's that its group may write (and others may not) is
    /// written anew into a new file without group write (`CheckedDirectory.replace`: a
    /// descriptor someone opened while it was group-writable writes to the old inode, which
    /// no name reaches any more); last, the directory loses group write (its setgid bit
    /// stays), so nobody else can add, rename or remove an entry in it from then on. A file
    /// another user made there is left as it is: its content is never trusted (it decides
    /// nothing, `StartState`). What a member of the group wrote into this user's files
    /// between the pass and this start is not told apart from this user's own content:
    /// docs/design.md ("State on shared volumes") states that limit.
    ///
    /// Never throws: a failure leaves the directory as it was, and the checks that follow say
    /// what is not trusted.
    public func tighten() {
        var found = stat()
        // The common case: one lstat, the directory not group-writable.
        guard lstat(path, &found) == 0, found.st_mode & 0o020 != 0, found.st_uid == geteuid(),
              FileMode.type(found) == FileMode.directory,
              let directory = try? FileSystem.directory(path, what: "state directory") else { return }
        var info = stat()
        guard fstat(directory.descriptor, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o022 == 0o020 else { return }
        removeGroupWrite(from: "lock", in: directory)
        guard let lock = try? FileLock.acquire(path: lockPath, wait: true, timeout: 2) else { return }
        for name in directory.names() where name != "lock" {
            rewriteWithoutGroupWrite(name, in: directory)
        }
        withExtendedLifetime(lock) {}
        if fchmod(directory.descriptor, info.st_mode & 0o7757) == 0 { try? directory.sync() }
    }

    /// The regular file `name`, this user's and group- but not world-writable, opened without
    /// following a link; nil otherwise. The caller closes the descriptor.
    private func groupWritableFile(_ name: String, in directory: CheckedDirectory, flags: Int32) -> (Int32, stat)? {
        guard let listed = directory.status(of: name), FileMode.type(listed) == FileMode.regular,
              listed.st_uid == geteuid(), listed.st_mode & 0o022 == 0o020 else { return nil }
        let fd = openat(directory.descriptor, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_ino == listed.st_ino, info.st_dev == listed.st_dev,
              info.st_uid == geteuid(), FileMode.type(info) == FileMode.regular else {
            close(fd)
            return nil
        }
        return (fd, info)
    }

    private func removeGroupWrite(from name: String, in directory: CheckedDirectory) {
        guard let (fd, info) = groupWritableFile(name, in: directory, flags: O_RDONLY) else { return }
        _ = fchmod(fd, info.st_mode & 0o755)
        close(fd)
    }

    private func rewriteWithoutGroupWrite(_ name: String, in directory: CheckedDirectory) {
        guard let (fd, info) = groupWritableFile(name, in: directory, flags: O_RDONLY) else { return }
        let bytes = try? FileSystem.readToEnd(fd, path: directory.child(name), limit: 64 << 20, regularFileSize: Int(info.st_size))
        close(fd)
        guard let bytes else { return }
        try? directory.replace(name, with: bytes, mode: info.st_mode & 0o755, exactMode: true)
    }
}
