#if canImport(Glibc)
import Glibc
#endif

/// The sample app's notes, format 1: `notes.txt` in the data directory, one note per line.
public struct NotesStore {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    public var path: String { directory + "/notes.txt" }

    /// Every note, oldest first.
    public func list() -> [String] {
        guard let file = fopen(path, "r") else { return [] }
        defer { fclose(file) }
        var notes: [String] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0, let line {
            var note = String(cString: line)
            if note.hasSuffix("\n") { note.removeLast() }
            notes.append(note)
        }
        free(line)
        return notes
    }

    /// Appends a note (one line; newlines become spaces). Returns false on failure.
    public func add(_ note: String) -> Bool {
        makeDirectory(directory)
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var line = String(note.map { $0 == "\n" ? " " : $0 }) + "\n"
        return line.withUTF8 { write(fd, $0.baseAddress, $0.count) == $0.count } && fsync(fd) == 0
    }
}

/// `mkdir -p` with mode 0700.
func makeDirectory(_ path: String) {
    var prefix = ""
    for component in path.split(separator: "/") {
        prefix += "/" + component
        mkdir(prefix, 0o700)
    }
}
