#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SwitchbackFiles

/// The SDK's small file operations, in one namespace, so an app's own helpers keep their
/// names even under `@testable import Switchback`.
enum SDKFiles {
    /// `mkdir -p` with mode 0700 through the file layer: each missing directory is made with
    /// `mkdirat` inside one that passed the checks (owned by this user or root, writable by no
    /// one else, no link on the way) and checked after; throws the layer's refusal otherwise.
    @discardableResult
    static func makeDirectory(_ path: String, what: String = "data directory", policy: TrustPolicy = .strict) throws(FileError) -> CheckedDirectory {
        try CheckedDirectory.open(absolute(path), what: what, creating: 0o700, policy: policy)
    }

    /// The checked directory holding `path` and the last component of `path`.
    static func holder(of path: String, what: String = "state directory", policy: TrustPolicy = .strict) throws(FileError) -> (CheckedDirectory, String) {
        let absolute = absolute(path)
        let directory = try CheckedDirectory.open(parent(of: absolute), what: what, policy: policy)
        guard let slash = absolute.lastIndex(of: "/") else { return (directory, absolute) }
        return (directory, String(absolute[absolute.index(after: slash)...]))
    }

    /// `path`, made absolute against the working directory.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : currentDirectory() + "/" + path
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Replaces a file atomically and durably: temporary file (created new, never through a
    /// link), fsync, `renameat` (a link at the final name is replaced, not followed), fsync of
    /// the directory, all relative to the checked directory that holds it. Readers see the old
    /// file or the new one, never half of one. False when the directory is refused or a call
    /// fails.
    @discardableResult
    static func replaceFile(_ path: String, with contents: String) -> Bool {
        guard let (directory, name) = try? holder(of: path) else { return false }
        return (try? directory.replace(name, with: Array(contents.utf8))) != nil
    }

    /// Removes a file with `unlinkat` in its checked directory (a link is removed, not followed).
    static func removeFile(_ path: String) {
        guard let (directory, name) = try? holder(of: path) else { return }
        try? directory.remove(name)
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
