#if canImport(Glibc)
import Glibc
#endif
import Switchback

/// What release 1.0.0 does its own way: no migrations yet, and the notes in format 1.
enum Release {
    static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {}

    static func beforeServing(_ launch: LaunchInfo) {}
}

/// Format 1: `notes.txt` in the data directory, one note per line.
struct NotesStore {
    let directory: String

    var path: String { directory + "/notes.txt" }

    /// Every note, oldest first; nil when the file exists but cannot be read.
    func list() -> [String]? {
        access(path, F_OK) == 0 ? readLines(path) : []
    }

    /// Appends a note (one line) durably.
    func add(_ note: String) -> Bool {
        appendLine(path, String(note.map { $0 == "\n" ? " " : $0 }))
    }
}

/// The lines of a file, without their newlines; nil when it cannot be opened.
func readLines(_ path: String) -> [String]? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var lines: [String] = []
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    while getline(&line, &capacity, file) > 0, let line {
        var text = String(cString: line)
        if text.hasSuffix("\n") { text.removeLast() }
        lines.append(text)
    }
    free(line)
    return lines
}

/// Appends one line with one write, then fsyncs.
func appendLine(_ path: String, _ line: String) -> Bool {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var text = line + "\n"
    return text.withUTF8 { write(fd, $0.baseAddress, $0.count) == $0.count } && fsync(fd) == 0
}
