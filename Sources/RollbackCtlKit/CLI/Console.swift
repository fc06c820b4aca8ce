import Foundation

/// Where a command's output goes: stdout for results, stderr for warnings and errors.
public struct Console: Sendable {
    var writeOut: @Sendable (String) -> Void
    var writeError: @Sendable (String) -> Void

    /// The process's stdout and stderr.
    public static let standard = Console(
        writeOut: { line in print(line) },
        writeError: { line in FileHandle.standardError.write(Data((line + "\n").utf8)) })

    /// Discards everything (a background job's console).
    package static let silent = Console(writeOut: { _ in }, writeError: { _ in })

    package func out(_ line: String) { writeOut(line) }
    package func error(_ line: String) { writeError(line) }
}
