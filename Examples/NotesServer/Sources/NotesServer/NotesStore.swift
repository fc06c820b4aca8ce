#if canImport(Glibc)
import Glibc
#endif

/// The server's notes, in the data directory the SDK gives (`LaunchInfo.dataDirectory`).
///
/// Format 2 (since 1.0.0): `notes.v2`, a header line `notes-server 2`, then one note per line
/// as `<unix time>\t<text>`. Format 1 (the 0.9 previews): `notes.txt`, one note per line, no
/// times. The migration step `notes-v2` converts 1 to 2; its revert converts 2 back to 1.
/// Tabs and newlines in a note become spaces, so every note is one line in either format.
struct NotesStore: Sendable {
    static let header = "notes-server 2"

    let directory: String

    var path: String { directory + "/notes.v2" }
    /// Where format 1 kept its notes.
    var legacyPath: String { directory + "/notes.txt" }

    /// Every note's text, oldest first.
    func list() -> [String] {
        Self.texts(inFormat2: readLines(path) ?? [])
    }

    /// Appends a note durably (one write, then fsync). Callers serialize their calls.
    func add(_ note: String) throws(NotesError) {
        if !fileExists(path) {
            // notes.txt without notes.v2: a rollback's downgrade converted the data to format 1
            // under this running server. Writing format 2 now would hide those notes from
            // the version the rollback starts; refuse until this server is restarted.
            if fileExists(legacyPath) { throw NotesError("the notes were converted to format 1 by a rollback; restart the server") }
            try create()
        }
        let text = String(note.map { $0 == "\n" || $0 == "\t" || $0 == "\r" ? " " : $0 })
        guard appendLine(path, "\(time(nil))\t\(text)") else { throw NotesError("cannot write \(path)") }
    }

    /// Creates an empty format-2 store, atomically.
    func create() throws(NotesError) {
        makeDirectory(directory)
        guard replaceFile(path, with: Self.header + "\n") else { throw NotesError("cannot create \(path)") }
    }

    /// Format 1 to format 2: writes `notes.v2` with every format-1 note (time 0: format 1 had
    /// none), atomically, then removes `notes.txt`. Safe to repeat after an interruption.
    func migrateFromFormat1() throws(NotesError) {
        guard fileExists(legacyPath) else { return }
        // An unreadable file must fail the step, not become an empty store.
        guard let lines = readLines(legacyPath) else { throw NotesError("cannot read \(legacyPath)") }
        let body = lines.map { "0\t\($0)\n" }.joined()
        guard replaceFile(path, with: Self.header + "\n" + body) else { throw NotesError("cannot write \(path)") }
        guard unlink(legacyPath) == 0 else { throw NotesError("cannot remove \(legacyPath)") }
    }

    /// Format 2 back to format 1, for a version before 1.0.0: writes `notes.txt` with every
    /// note's text, atomically, then removes `notes.v2` (the times are lost). Safe to repeat:
    /// `notes.v2` goes only once `notes.txt` holds everything it had.
    func revertToFormat1() throws(NotesError) {
        guard fileExists(path) else { return }
        guard let lines = readLines(path) else { throw NotesError("cannot read \(path)") }
        let body = Self.texts(inFormat2: lines).map { $0 + "\n" }.joined()
        guard replaceFile(legacyPath, with: body) else { throw NotesError("cannot write \(legacyPath)") }
        guard unlink(path) == 0 else { throw NotesError("cannot remove \(path)") }
    }

    /// The texts of format-2 lines (the header first).
    static func texts(inFormat2 lines: [String]) -> [String] {
        lines.dropFirst().compactMap { line in
            line.firstIndex(of: "\t").map { String(line[line.index(after: $0)...]) }
        }
    }
}

struct NotesError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Files, with Glibc: durable writes need fsync, which Foundation's atomic write lacks.

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

/// The lines of a file, without their newlines; nil when it cannot be opened for reading.
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

/// Appends one line with one write, then fsyncs it.
func appendLine(_ path: String, _ line: String) -> Bool {
    let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var text = line + "\n"
    return text.withUTF8 { write(fd, $0.baseAddress, $0.count) == $0.count } && fsync(fd) == 0
}

/// Replaces a file atomically and durably: temporary file, fsync, rename, fsync of the directory.
func replaceFile(_ path: String, with contents: String) -> Bool {
    let temporary = path + ".tmp-\(getpid())"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return false }
    var text = contents
    let written = text.withUTF8 { write(fd, $0.baseAddress, $0.count) == $0.count } && fsync(fd) == 0
    close(fd)
    guard written, rename(temporary, path) == 0 else { unlink(temporary); return false }
    let parent = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
    let directory = open(parent.isEmpty ? "/" : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directory >= 0 { fsync(directory); close(directory) }
    return true
}

/// `mkdir -p` with mode 0700.
func makeDirectory(_ path: String) {
    var prefix = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/") {
        prefix += "/" + component
        mkdir(prefix, 0o700)
    }
}
