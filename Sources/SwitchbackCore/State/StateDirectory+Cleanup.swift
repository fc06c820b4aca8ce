#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

extension StateDirectory {
    /// Removes temporary files (`NAME.tmp-PID`, left by `FileSystem.replace`) whose writer
    /// is no longer running: a writer killed between creating and renaming one leaves it
    /// behind. The caller holds the directory's lock, so no live writer of the locked files
    /// races; a file whose writer is still running is left alone. Returns how many it removed.
    @discardableResult
    public func removeStaleTemporaryFiles() -> Int {
        guard let directory = try? FileSystem.directory(path, what: "state directory") else { return 0 }
        var removed = 0
        for name in directory.names() {
            guard let marker = name.utf8.lastIndex(of: 0x2D) /* - */, name.utf8[..<marker].count >= 4,
                  String(Substring(name.utf8[name.utf8.index(marker, offsetBy: -4)..<marker])) == ".tmp",
                  let pid = Int32(String(Substring(name.utf8[name.utf8.index(after: marker)...]))), pid > 0 else { continue }
            if kill(pid, 0) == 0 || errno == EPERM { continue }
            if (try? directory.remove(name)) != nil { removed += 1 }
        }
        return removed
    }
}
