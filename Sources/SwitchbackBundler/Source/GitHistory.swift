import Foundation

/// The app repository's history as the bundler needs it: which commit `PreviousVersion/`
/// pins, that commit's sources, and the current commit. A shallow clone (what CI checkouts
/// make) lacks the pinned commit: it is fetched, alone and at depth 1, from the clone's
/// own remote.
struct GitHistory {
    /// The app package's directory (possibly a subdirectory of the repository).
    var packageDirectory: String
    var git: String

    init(packageDirectory: String) throws(BundlerError) {
        self.packageDirectory = packageDirectory
        guard let git = Command.find("git") else {
            throw BundlerError(.tool, "Cannot find git on PATH; install git, or bundle from a release artifact with --previous-from and --build-id.")
        }
        self.git = git
    }

    private func run(_ arguments: [String]) throws(BundlerError) -> Command.Result {
        try Command(git, ["-C", packageDirectory] + arguments).run()
    }

    /// Whether the package is inside a git work tree.
    var isRepository: Bool {
        ((try? run(["rev-parse", "--git-dir"]))?.status ?? 1) == 0
    }

    /// The commit `PreviousVersion/` is pinned to in the index, or nil.
    func pinnedCommit() throws(BundlerError) -> String? {
        let listed = try run(["ls-files", "-s", "PreviousVersion"]).output
        for line in listed.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count >= 2, fields[0] == "160000" { return String(fields[1]) }
        }
        return nil
    }

    /// HEAD's full commit id.
    func head() throws(BundlerError) -> String {
        let result = try run(["rev-parse", "HEAD"])
        guard result.status == 0 else { throw BundlerError(.history, "The repository at \(packageDirectory) has no commit yet; commit the app, then bundle.") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether tracked files differ from HEAD.
    func isDirty() throws(BundlerError) -> Bool {
        !(try run(["status", "--porcelain", "--untracked-files=no"]).output.isEmpty)
    }

    /// The repository's top directory and the package's path inside it ("" or "sub/dir/").
    func layout() throws(BundlerError) -> (top: String, prefix: String) {
        let top = try run(["rev-parse", "--show-toplevel"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let prefix = try run(["rev-parse", "--show-prefix"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        return (top, prefix)
    }

    /// Makes sure `commit` is in the clone: a shallow clone fetches it from its remote.
    func ensure(_ commit: String) throws(BundlerError) {
        if try run(["cat-file", "-e", commit + "^{commit}"]).status == 0 { return }
        let shallow = try run(["rev-parse", "--is-shallow-repository"]).output.hasPrefix("true")
        let remotes = try run(["remote"]).output.split(separator: "\n").map(String.init)
        guard let remote = remotes.contains("origin") ? "origin" : remotes.first else {
            throw BundlerError(.history, "PreviousVersion/ is pinned to \(commit), which this repository does not have and it has no remote to fetch it from; fetch that commit, or pass --previous-from with the previous release's bundle.")
        }
        let fetched = try run(["fetch", "-q", "--depth", "1", remote, commit])
        guard fetched.status == 0, try run(["cat-file", "-e", commit + "^{commit}"]).status == 0 else {
            let how = shallow ? "this is a shallow clone and fetching the commit from '\(remote)' failed" : "fetching it from '\(remote)' failed"
            throw BundlerError(.history, "PreviousVersion/ is pinned to \(commit), which this clone does not have; \(how) (\(fetched.output.lastLines(1).trimmingCharacters(in: .whitespacesAndNewlines))). Run 'git fetch --unshallow', or pass --previous-from with the previous release's bundle.")
        }
    }

    /// Extracts the whole repository at `commit` into `directory` (the whole repository, so
    /// a path dependency inside it, such as the Switchback it ships beside, is as that
    /// commit had it).
    func extract(_ commit: String, into directory: String) throws(BundlerError) {
        try? FileManager.default.removeItem(atPath: directory)
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw BundlerError(.output, "Cannot create \(directory): \(error.localizedDescription).", path: directory)
        }
        let archive = directory + ".tar"
        defer { try? FileManager.default.removeItem(atPath: archive) }
        let made = try run(["archive", "--format=tar", "-o", archive, commit])
        guard made.status == 0 else { throw BundlerError(.history, "git archive of \(commit) failed: \(made.output.lastLines(3))") }
        let unpacked = try Command(Archive.tar, ["-x", "-f", archive, "-C", directory]).run()
        guard unpacked.status == 0 else { throw BundlerError(.tool, "Unpacking the previous release's sources failed: \(unpacked.output.lastLines(3))") }
    }

    /// The file `path` (relative to the package) at `commit`, or nil.
    func file(_ path: String, at commit: String) throws(BundlerError) -> String? {
        let (_, prefix) = try layout()
        let result = try run(["show", "\(commit):\(prefix)\(path)"])
        return result.status == 0 ? result.output : nil
    }
}
