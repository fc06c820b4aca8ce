#if canImport(Glibc)
import Glibc
#endif

/// The sample app's notes.
///
/// Format 2 (since 1.2.0): `notes.v2` in the data directory, a header line
/// `switchback-notes 2`, then one note per line as `<unix time>\t<text>` (tabs and newlines in
/// the text become spaces). Format 1 (up to 1.1.0) was `notes.txt`, one note per line; the
/// migration step `notes-v2` converts it (see AppStartup).
public struct NotesStore {
    public static let header = "switchback-notes 2"

    public let directory: String

    public init(directory: String) { self.directory = directory }

    public var path: String { directory + "/notes.v2" }
    /// Where format 1 kept its notes.
    public var legacyPath: String { directory + "/notes.txt" }

    /// Every note, oldest first.
    public func list() -> [String] {
        Self.notes(inFormat2: readLines(path))
    }

    /// The texts of format-2 lines (the header first).
    static func notes(inFormat2 lines: [String]) -> [String] {
        lines.dropFirst().compactMap { line in
            line.firstIndex(of: "\t").map { String(line[line.index(after: $0)...]) }
        }
    }

    /// Appends a note durably. Returns false on failure.
    public func add(_ note: String) -> Bool {
        if access(path, F_OK) != 0, !create() { return false }
        let text = String(note.map { $0 == "\n" || $0 == "\t" ? " " : $0 })
        return appendLine(path, "\(time(nil))\t\(text)")
    }

    /// Creates an empty format-2 store (atomically).
    @discardableResult
    public func create() -> Bool {
        makeDirectory(directory)
        return replaceFile(path, with: Self.header + "\n")
    }

    /// Converts format 1 to format 2: writes `notes.v2` with every format-1 note (atomically),
    /// then removes `notes.txt`. Safe to repeat after an interruption.
    public func migrateFromFormat1() -> Bool {
        guard access(legacyPath, F_OK) == 0 else { return true }
        // An unreadable file must fail the step, not become an empty store.
        guard let lines = readLinesIfReadable(legacyPath) else { return false }
        let body = lines.map { "0\t\($0)" }
        guard replaceFile(path, with: ([Self.header] + body).joined(separator: "\n") + "\n") else { return false }
        return unlink(legacyPath) == 0
    }

    /// Converts format 2 back to format 1, for 1.1.0: writes `notes.txt` with every note's
    /// text (atomically), then removes `notes.v2`. Format 1 has no times; they are lost.
    /// Safe to repeat after an interruption: `notes.v2` is removed only once `notes.txt`
    /// holds everything it had.
    public func revertToFormat1() -> Bool {
        guard access(path, F_OK) == 0 else { return true }
        guard let lines = readLinesIfReadable(path) else { return false }
        let body = Self.notes(inFormat2: lines).map { $0 + "\n" }.joined()
        guard replaceFile(legacyPath, with: body) else { return false }
        return unlink(path) == 0
    }
}

/// The lines of a file (without newlines); empty when it does not exist.
func readLines(_ path: String) -> [String] {
    readLinesIfReadable(path) ?? []
}

/// The lines of a file (without newlines); nil when it cannot be opened for reading.
func readLinesIfReadable(_ path: String) -> [String]? {
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

/// Appends one line with one write and fsyncs it.
func appendLine(_ path: String, _ line: String) -> Bool {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var text = line + "\n"
    return text.withUTF8 { write(fd, $0.baseAddress, $0.count) == $0.count } && fsync(fd) == 0
}

/// Replaces a file atomically and durably: temporary file, fsync, rename, fsync of the directory.
func replaceFile(_ path: String, with contents: String) -> Bool {
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return false }
    var text = contents
    let written = text.withUTF8 { write(fd, $0.baseAddress, $0.count) == $0.count } && fsync(fd) == 0
    close(fd)
    guard written, rename(temporary, path) == 0 else { return false }
    let parent = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
    let directory = open(parent.isEmpty ? "/" : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directory >= 0 { fsync(directory); close(directory) }
    return true
}

/// `mkdir -p` with mode 0700.
func makeDirectory(_ path: String) {
    var prefix = ""
    for component in path.split(separator: "/") {
        prefix += "/" + component
        mkdir(prefix, 0o700)
    }
}
