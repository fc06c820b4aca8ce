#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

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

    /// The process's stdout and stderr. What reaches the terminal passes
    /// `OutsideText.keepingLines` first: a reason, a server's sentence or a file's text quoted
    /// in a report runs no escape sequence, whoever wrote it.
    public static let standard = Console(
        writeOut: { line in print(OutsideText.keepingLines(line)) },
        writeError: { line in
            var text = OutsideText.keepingLines(line) + "\n"
            _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
        })

    /// Discards everything (a background job's console).
    package static let silent = Console(writeOut: { _ in }, writeError: { _ in })

    package func out(_ line: String) { writeOut(line) }
    package func error(_ line: String) { writeError(line) }
}
