#if canImport(Glibc)
import Glibc
#endif

/// Where a command's output goes: stdout for results, stderr for warnings and errors.
public struct Console: Sendable {
    var writeOut: @Sendable (String) -> Void
    var writeError: @Sendable (String) -> Void

    /// A console that hands each line to `writeOut` (results) or `writeError` (warnings and
    /// errors): a test's capture, or a prefix before the real one (`rollout --dry-run`).
    package init(writeOut: @escaping @Sendable (String) -> Void, writeError: @escaping @Sendable (String) -> Void) {
        self.writeOut = writeOut
        self.writeError = writeError
    }

    /// The process's stdout and stderr.
    public static let standard = Console(
        writeOut: { line in print(line) },
        writeError: { line in
            var text = line + "\n"
            _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
        })

    /// Discards everything (a background job's console).
    package static let silent = Console(writeOut: { _ in }, writeError: { _ in })

    package func out(_ line: String) { writeOut(line) }
    package func error(_ line: String) { writeError(line) }
}
