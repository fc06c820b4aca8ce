import Foundation

/// A release tarball: the bundle's files at its root (`./bin`, `./lib`, `./slots`,
/// `./manifest`), written and read with the system's `tar`.
enum Archive {
    static var tar: String { Command.find("tar") ?? "/bin/tar" }

    /// Writes `bundle` as a gzip'ed tarball at `file` (through a temporary name: a reader
    /// never sees half of one).
    static func write(_ bundle: String, to file: String) throws(BundlerError) {
        let temporary = file + ".tmp-\(getpid())"
        let made = try Command(tar, ["--sort=name", "--owner=0", "--group=0", "--numeric-owner", "--mtime=@0",
                                     "-czf", temporary, "-C", bundle, "."]).run()
        guard made.status == 0 else {
            try? FileManager.default.removeItem(atPath: temporary)
            throw BundlerError(.output, "Writing the tarball \(file) failed: \(made.output.lastLines(3))", path: file)
        }
        guard rename(temporary, file) == 0 else {
            throw BundlerError(.output, "Cannot move the tarball into place at \(file): \(String(cString: strerror(errno))).", path: file)
        }
    }

    /// Unpacks `file` into a new `directory` and returns the bundle's root in it (the
    /// directory holding `manifest`, at the top or one level down).
    /// The same tarball file as last time (path, size, modification time, inode: the record
    /// beside `directory`) is not unpacked again: gunzip took 1.6 s of every release that takes
    /// its previous slot from the same artifact. What it holds is checked either way
    /// (`PreviousArtifact.open`: members, sizes, SHA-256s).
    static func unpack(_ file: String, into directory: String) throws(BundlerError) -> String {
        let record = directory + ".record"
        let key = "unpacked " + Remembered.identity(of: URL(fileURLWithPath: file).standardizedFileURL.path)
        // Unpacked before, and still whole enough to have its manifest: checked below as ever.
        if (try? String(contentsOfFile: record, encoding: .utf8)) == key, let root = bundleRoot(in: directory) { return root }
        try? FileManager.default.removeItem(atPath: record)
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let unpacked = try Command(tar, ["-x", "-f", file, "-C", directory, "--no-same-owner"]).run()
        guard unpacked.status == 0 else {
            throw BundlerError(.artifact, "Cannot unpack the previous release \(file): \(unpacked.output.lastLines(2).trimmingCharacters(in: .whitespacesAndNewlines)); pass the tarball switchback-bundle --tarball wrote, or its bundle directory.", path: file)
        }
        try? key.write(toFile: record, atomically: true, encoding: .utf8)
        if let root = bundleRoot(in: directory) { return root }
        throw BundlerError(.artifact, "The previous release \(file) holds no bundle manifest; pass the tarball switchback-bundle --tarball wrote, or its bundle directory.", path: file)
    }

    /// The directory holding `manifest` in `directory`: itself, or one entry down.
    private static func bundleRoot(in directory: String) -> String? {
        if FileManager.default.fileExists(atPath: directory + "/manifest") { return directory }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.lazy.map { directory + "/" + $0 }.first { FileManager.default.fileExists(atPath: $0 + "/manifest") }
    }
}
