#if canImport(Glibc)
import Glibc
#endif

/// A new release installed under the running supervisor: a deploy replaces the bundle's
/// directory (two renames, `rm -rf && cp -a`, a symlink flipped to another release's directory)
/// and leaves the service running. The supervisor looks at the manifest at its bundle's path
/// once per `supervise.release_check_ms`; a manifest that changed and then stayed the same
/// for one more check is read like the launcher reads it, becomes the release the supervisor
/// acts for, and the persisted choice is looked at again with it. The switch to the new build
/// is then the usual one (`LaunchPlanner.switchPath`): start-first, or stop-first when its
/// steps leave data the serving build cannot read. Every child from then on runs the new
/// release's launcher. The supervisor's own settings (`supervise.*`, `analysis.*`,
/// `remote.*`) stay those it started with, until it is restarted.
extension Supervisor {
    /// The bundle's directory as the supervisor was started from it, and the launcher in it.
    /// `argv[0]` names it when it is a path to this very executable (a symlink in it, such as
    /// `/srv/app/current/bin/launcher`, is kept, so that a deploy that flips the link is
    /// seen); otherwise the resolved directory `/proc/self/exe` gives.
    static func invokedBundle(resolved root: String) -> (path: String, root: String, launcher: String) {
        let executable = FileSystem.executablePath() ?? root + "/bin/launcher"
        let inBundle = executable.hasPrefix(root + "/") ? String(executable.dropFirst(root.count)) : "/bin/launcher"
        let resolved = (root, root, inBundle)
        guard let first = CommandLine.arguments.first, first.contains("/") else { return resolved }
        var absolute = first
        if !first.hasPrefix("/") {
            guard let directory = currentDirectory() else { return resolved }
            absolute = directory + "/" + first
        }
        guard absolute.hasSuffix(inBundle), FileSystem.resolved(absolute) == executable else { return resolved }
        return (String(absolute.dropLast(inBundle.count)), root, inBundle)
    }

    static func currentDirectory() -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(PATH_MAX) + 1) { buffer in
            getcwd(buffer.baseAddress!, buffer.count).map { String(cString: $0) }
        }
    }

    static func manifestFingerprint(bundleRoot: String) -> FileFingerprint? {
        (try? FileSystem.status(bundleRoot + "/manifest")).flatMap { $0.map(FileFingerprint.init) }
    }

    /// One `stat` of the manifest per `supervise.release_check_ms`; see the type's comment.
    func noticeNewRelease() {
        guard trusted, settings.releaseCheckMilliseconds > 0 else { return }
        let now = monotonicNow()
        guard now >= nextReleaseCheck else { return }
        nextReleaseCheck = now + Double(settings.releaseCheckMilliseconds) / 1000
        // Missing (an install that removed the directory and copies the new one): nothing yet.
        guard let seen = Self.manifestFingerprint(bundleRoot: bundlePath), seen != releaseSeen, seen != releaseRefused else {
            releaseSettling = nil
            return
        }
        // Changed since the last check: the install may still be copying; adopted at the next
        // check if it stays the same.
        guard releaseSettling == seen else {
            releaseSettling = seen
            return
        }
        // A switch under way ends with the builds it started with; the release waits for it.
        switch machine.state {
        case .running(let child) where child.stop == nil && child.slot != nil: break
        case .backingOff, .idle: break
        default: return
        }
        releaseSettling = nil
        adoptRelease(seen)
    }

    /// Reads the new release's manifest (refusing it as the launcher would) and hands it to
    /// the machine when its builds differ from those the supervisor acts for.
    func adoptRelease(_ seen: FileFingerprint) {
        let release: Manifest
        // The directory itself from here on: a link flipped again later is another release.
        let root = FileSystem.resolved(bundlePath) ?? bundlePath
        do { release = try Manifest.load(bundleRoot: root) } catch {
            releaseRefused = seen
            let message = error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message
            Launcher.printError("launcher: supervisor: A new manifest at \(bundlePath) was not adopted (\(message)); release \(manifest.current.version) goes on serving. Install the release again, or restart the service.")
            return
        }
        guard release.appID == manifest.appID else {
            releaseRefused = seen
            Launcher.printError("launcher: supervisor: The bundle at \(bundlePath) is now another app's (\(release.appID), not \(manifest.appID)); release \(manifest.current.version) goes on serving. Restart the service to run the other app.")
            return
        }
        releaseSeen = seen
        let previous = manifest
        manifest = release
        bundleRoot = root
        guard release.current.sha256 != previous.current.sha256 || release.previous.sha256 != previous.previous.sha256 else { return }
        let fixed = ["supervise.", "analysis.", "remote."]
        let changed = Set(previous.settings.keys).union(release.settings.keys)
            .filter { key in fixed.contains { key.hasPrefix($0) } && previous.settings[key] != release.settings[key] }.sorted()
        if !changed.isEmpty {
            Launcher.printError("launcher: supervisor: release \(release.current.version) changes \(changed.joined(separator: ", ")); the supervisor keeps the settings it started with until the service is restarted.")
        }
        // The directive's sync runs the new release's programs against its manifest, with the
        // settings the supervisor started with (the same, or the restart the line above asks for).
        if trusted, !changed.contains(where: { $0.hasPrefix("remote.") }) {
            remoteCheck = RemoteCheckTrigger(manifest: release, directory: directory, bundleRoot: root)
        }
        send(.releaseInstalled(.init(currentVersion: release.current.version, currentBuild: release.current.sha256,
                                     previousVersion: release.previous.version, previousBuild: release.previous.sha256)))
    }
}
