#if canImport(Glibc)
import Glibc
#endif

/// What a slow question answered last time, in a file of the bundler's work directory, for as
/// long as what it depends on is unchanged: `swift --version` and `-print-target-info` for
/// the same toolchain files, the products of the same Package.swift. Each costs a second or
/// more per release (a toolchain process, a manifest compiled and run), for an answer that
/// changes when its inputs do. The file holds the key's line, then the answer.
enum Remembered {
    /// The answer recorded at `path` under `key`, or `compute()`'s, recorded for next time.
    static func answer(at path: String, key: String, _ compute: () throws(BundlerError) -> String) throws(BundlerError) -> String {
        let keyLine = key.replacingOccurrences(of: "\n", with: " ")
        if let text = try? String(contentsOfFile: path, encoding: .utf8), let end = text.firstIndex(of: "\n"),
           text[..<end] == keyLine {
            return String(text[text.index(after: end)...])
        }
        let answer = try compute()
        try? (keyLine + "\n" + answer).write(toFile: path, atomically: true, encoding: .utf8)
        return answer
    }

    /// A file's identity for a key: path, size, modification time and inode, or "missing".
    static func identity(of path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return "\(path) missing" }
        return "\(path) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(info.st_ino)"
    }
}
