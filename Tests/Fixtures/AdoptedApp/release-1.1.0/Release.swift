#if canImport(Glibc)
import Glibc
#endif
import Switchback

/// What release 1.1.0 does its own way: the notes move to format 2, with a migration step
/// that 1.0.0 cannot read past and a revert that writes format 1 back for it; and a new
/// start-up check that crashes when ADOPTED_CRASH=1 (the bug this release ships with).
enum Release {
    static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {
        let notes = NotesStore(directory: launch.dataDirectory)
        migrator.register("notes-format-2", at: "1.1.0", readerFloor: "1.1.0", revert: { _ in
            guard notes.revertToFormat1() else { throw NotesError("cannot convert \(notes.path) back to \(notes.legacyPath)") }
        }) { _ in
            guard notes.migrateFromFormat1() else { throw NotesError("cannot convert \(notes.legacyPath) to \(notes.path)") }
        }
    }

    static func beforeServing(_ launch: LaunchInfo) {
        if let value = getenv("ADOPTED_CRASH"), String(cString: value) == "1" {
            fatalError("AdoptedApp \(launch.version) crashes at start-up: ADOPTED_CRASH=1")
        }
    }
}

struct NotesError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Format 2: `notes.v2` in the data directory, the header `adopted-notes 2`, then one note per
/// line as `<unix time>\t<text>`. Format 1 (1.0.0) was `notes.txt`, one note per line.
struct NotesStore {
    static let header = "adopted-notes 2"

    let directory: String

    var path: String { directory + "/notes.v2" }
    var legacyPath: String { directory + "/notes.txt" }

    /// Every note, oldest first; nil when the file exists but cannot be read.
    func list() -> [String]? {
        guard access(path, F_OK) == 0 else { return [] }
        return readLines(path).map(Self.notes(inFormat2:))
    }

    static func notes(inFormat2 lines: [String]) -> [String] {
        lines.dropFirst().compactMap { line in line.firstIndex(of: "\t").map { String(line[line.index(after: $0)...]) } }
    }

    /// Appends a note durably, creating the store first if need be.
    func add(_ note: String) -> Bool {
        if access(path, F_OK) != 0, !replaceFile(path, with: Self.header + "\n") { return false }
        let text = String(note.map { $0 == "\n" || $0 == "\t" ? " " : $0 })
        return appendLine(path, "\(time(nil))\t\(text)")
    }

    /// notes.txt to notes.v2 (atomically), then removes notes.txt. Safe to repeat.
    func migrateFromFormat1() -> Bool {
        guard access(legacyPath, F_OK) == 0 else { return true }
        guard let lines = readLines(legacyPath) else { return false }
        let body = lines.map { "0\t\($0)\n" }.joined()
        guard replaceFile(path, with: Self.header + "\n" + body) else { return false }
        return unlink(legacyPath) == 0
    }

    /// notes.v2 back to notes.txt (atomically), then removes notes.v2. Safe to repeat.
    func revertToFormat1() -> Bool {
        guard access(path, F_OK) == 0 else { return true }
        guard let lines = readLines(path) else { return false }
        guard replaceFile(legacyPath, with: Self.notes(inFormat2: lines).map { $0 + "\n" }.joined()) else { return false }
        return unlink(path) == 0
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

/// Replaces a file atomically and durably: a temporary file, fsync, rename.
func replaceFile(_ path: String, with contents: String) -> Bool {
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return false }
    var text = contents
    let written = text.withUTF8 { write(fd, $0.baseAddress, $0.count) == $0.count } && fsync(fd) == 0
    close(fd)
    guard written, rename(temporary, path) == 0 else { unlink(temporary); return false }
    return true
}
