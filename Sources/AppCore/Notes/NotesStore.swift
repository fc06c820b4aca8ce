#if canImport(Glibc)
import Glibc
#endif

/// The sample app's notes.
///
/// Format 2 (since 1.2.0): `notes.v2` in the data directory, a header line
/// `switchback-notes 2`, then one note per line as `<unix time>\t<text>` (tabs and newlines in
/// the text become spaces). Format 1 (below 1.2.0) is `notes.txt`, one note per line; the
/// migration step `notes-v2` converts it (see AppStartup). A build reads and writes the
/// format of its version (`format(forVersion:)`), so the same sources built as 1.1.9 are a
/// format-1 build.
public struct NotesStore {
    public static let header = "switchback-notes 2"

    public let directory: String
    /// The format this build reads and writes: 1 or 2.
    public let format: Int

    public init(directory: String, format: Int = 2) {
        self.directory = directory
        self.format = format
    }

    /// The store of a build of `version`.
    public init(directory: String, version: String) {
        self.init(directory: directory, format: Self.format(forVersion: version))
    }

    /// 1 below 1.2.0, 2 from 1.2.0 on (numeric dotted components; a pre-release of 1.2.0 is 2).
    public static func format(forVersion version: String) -> Int {
        let core = version.split(separator: "-", maxSplits: 1).first ?? ""
        let parts = core.split(separator: ".").map { Int($0) ?? 0 }
        let padded = parts + Array(repeating: 0, count: max(0, 3 - parts.count))
        return padded[0] > 1 || (padded[0] == 1 && padded[1] >= 2) ? 2 : 1
    }

    /// The file of this build's format.
    public var currentPath: String { format == 1 ? legacyPath : path }

    /// Why this build cannot read the notes as they are (only the other format's file is
    /// there), or nil.
    public func formatProblem() -> String? {
        let other = format == 1 ? path : legacyPath
        guard access(currentPath, F_OK) != 0, access(other, F_OK) == 0 else { return nil }
        return "the notes are in format \(3 - format) (\(other)), which this build (format \(format)) cannot read"
    }

    public var path: String { directory + "/notes.v2" }
    /// Where format 1 kept its notes.
    public var legacyPath: String { directory + "/notes.txt" }

    /// Every note, oldest first.
    public func list() -> [String] {
        format == 1 ? readLines(legacyPath) : Self.notes(inFormat2: readLines(path))
    }

    /// The texts of format-2 lines (the header first).
    static func notes(inFormat2 lines: [String]) -> [String] {
        lines.dropFirst().compactMap { line in
            line.firstIndex(of: "\t").map { String(line[line.index(after: $0)...]) }
        }
    }

    /// Appends a note durably. Returns false on failure.
    public func add(_ note: String) -> Bool {
        if access(currentPath, F_OK) != 0, !create() { return false }
        let text = String(note.map { $0 == "\n" || $0 == "\t" ? " " : $0 })
        return appendLine(currentPath, format == 1 ? text : "\(time(nil))\t\(text)")
    }

    /// Creates an empty store of this build's format (atomically).
    @discardableResult
    public func create() -> Bool {
        makeDirectory(directory)
        return replaceFile(currentPath, with: format == 1 ? "" : Self.header + "\n")
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
