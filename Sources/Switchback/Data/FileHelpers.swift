#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The SDK's small file operations, in one namespace, so an app's own helpers keep their
/// names even under `@testable import Switchback`.
enum SDKFiles {
    /// `mkdir -p` with mode 0700.
    static func makeDirectory(_ path: String) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            mkdir(prefix, 0o700)
        }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Replaces a file atomically and durably: temporary file, fsync, rename, fsync of the
    /// directory. Readers see the old file or the new one, never half of one.
    @discardableResult
    static func replaceFile(_ path: String, with contents: String) -> Bool {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        var text = contents
        let written = text.withUTF8 { write(fd, $0.baseAddress, $0.count) == $0.count } && fsync(fd) == 0
        close(fd)
        guard written, rename(temporary, path) == 0 else { unlink(temporary); return false }
        let directory = open(parent(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 { fsync(directory); close(directory) }
        return true
    }

    /// Where `printError` writes by default: stderr (the SDK's tests point it elsewhere
    /// rather than redirect the test process's own stderr).
    static let standardError = Mutex<Int32>(2)

    /// Writes one line to a descriptor (stderr by default).
    static func printError(_ line: String, to fd: Int32? = nil) {
        var text = line + "\n"
        let target = fd ?? standardError.withLock { $0 }
        _ = text.withUTF8 { write(target, $0.baseAddress, $0.count) }
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The working directory, or "." when it cannot be read.
    static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
