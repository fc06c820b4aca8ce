import Foundation
import SwitchbackCore

/// The last release's bundle (a directory or the tarball `--tarball` wrote), whose current
/// slot becomes this release's previous slot without being rebuilt. Taken only after its
/// manifest checks out: the launcher's own parser reads it; the slot and every bundled
/// library match their recorded sizes and SHA-256; it was built from the commit
/// `PreviousVersion/` pins, by this toolchain, with an ABI stamp this launcher runs; it holds
/// only files and directories (no symbolic link, FIFO or device anywhere: the new release
/// would carry a link, or the bundler would read what it points to); and its debug copy of
/// the slot, which the new release carries too, is that slot unstripped.
struct PreviousArtifact {
    /// The artifact's bundle root.
    var root: String
    var manifest: Manifest
    /// Its current slot: the file that becomes the previous slot.
    var slot: String { Manifest.slotPath(bundleRoot: root, slot: .current) }
    /// The unstripped copy, when the artifact has one.
    var debugSlot: String? {
        let path = root + "/debug/current/libAppCore.so.debug"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }
    var record: Manifest.SlotRecord { manifest.current }
    var commit: String? { manifest.settings["current.commit"] }

    /// Opens and checks the artifact at `path` (unpacking a tarball into `work`). A tarball
    /// unpacked by an earlier release that no longer passes the checks (its copy in `work`
    /// damaged or changed) is unpacked again and checked once more before it is refused.
    static func open(_ path: String, work: String, pinned: String?, toolchain: Toolchain) throws(BundlerError) -> PreviousArtifact {
        do { return try openOnce(path, work: work, pinned: pinned, toolchain: toolchain) } catch {
            guard unlink(work + ".record") == 0 else { throw error }
            return try openOnce(path, work: work, pinned: pinned, toolchain: toolchain)
        }
    }

    private static func openOnce(_ path: String, work: String, pinned: String?, toolchain: Toolchain) throws(BundlerError) -> PreviousArtifact {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw BundlerError(.artifact, "The previous release \(path) does not exist; pass the last release's tarball or bundle directory.", path: path)
        }
        func refuse(_ why: String) -> BundlerError {
            BundlerError(.artifact, "The previous release \(path) \(why).", path: path)
        }
        let root: String
        if isDirectory.boolValue {
            root = path
            try checkMembers(of: root, refuse)
        } else {
            root = try Archive.unpack(path, into: work)
            try checkMembers(of: work, refuse)
        }
        guard let bytes = FileManager.default.contents(atPath: root + "/manifest") else {
            throw refuse("has no manifest; pass the last release's tarball or bundle directory")
        }
        let manifest: Manifest
        do { manifest = try Manifest.parse([UInt8](bytes), path: root + "/manifest") } catch {
            throw refuse("has a manifest this bundler cannot read (\(error.message))")
        }
        let artifact = PreviousArtifact(root: root, manifest: manifest)
        try check(artifact.slot, size: manifest.current.size, sha256: manifest.current.sha256, what: "current slot", refuse)
        for (name, size, sha256) in BundleManifest.libraries(of: manifest) {
            try check(root + "/lib/" + name, size: size, sha256: sha256, what: "bundled library lib/\(name)", refuse)
        }
        if let debug = artifact.debugSlot {
            try checkDebugCopy(debug, of: manifest.current.sha256, objcopy: toolchain.objcopy, work: work + "-debug", refuse)
        }
        guard let commit = artifact.commit else {
            throw refuse("does not record the commit it was built from (current.commit); it predates self-contained bundles: rebuild the previous slot from source by leaving out --previous-from")
        }
        if let pinned, commit != pinned {
            throw refuse("was built from commit \(commit), but PreviousVersion/ pins \(pinned); pass that release's artifact, or pin \(commit) with scripts/pin-previous")
        }
        let built = manifest.settings["toolchain"] ?? "an unrecorded toolchain"
        guard built == toolchain.version else {
            throw refuse("was built by \(built), not by this toolchain (\(toolchain.version)); both slots must come from one toolchain: leave out --previous-from to rebuild it")
        }
        guard let stamp = ABIStamp(manifest.current.abiStamp) else { throw refuse("has an unreadable ABI stamp") }
        if let problem = stamp.incompatibility() { throw refuse("has a slot that \(problem)") }
        return artifact
    }

    /// Refuses anything under `directory` that is not a plain file or a directory, naming the
    /// member (its path from `directory`): a symbolic link (`slots/current` to a directory
    /// elsewhere, a debug file to a root-only file) would be followed by every later read and
    /// copied into the new release as a link. Checked with `lstat`, before anything is read.
    static func checkMembers(of directory: String, _ refuse: (String) -> BundlerError) throws(BundlerError) {
        var pending = [""]
        while let relative = pending.popLast() {
            let folder = relative.isEmpty ? directory : directory + "/" + relative
            let names: [String]
            do { names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted() } catch {
                throw refuse("has a directory \(relative.isEmpty ? "." : relative) that cannot be read (\(error.localizedDescription))")
            }
            for name in names {
                let member = relative.isEmpty ? name : relative + "/" + name
                var info = stat()
                guard lstat(directory + "/" + member, &info) == 0 else {
                    throw refuse("has a member \(member) that cannot be examined (\(String(cString: strerror(errno))))")
                }
                switch info.st_mode & S_IFMT {
                case S_IFDIR: pending.append(member)
                case S_IFREG: continue
                case S_IFLNK:
                    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + member)) ?? "?"
                    throw refuse("has a symbolic link at \(member) (to \(target)); a release artifact holds only files and directories: pass the tarball switchback-bundle --tarball wrote, or its bundle directory, as it was written")
                default:
                    throw refuse("has a member \(member) that is neither a file nor a directory; a release artifact holds only files and directories: pass the tarball switchback-bundle --tarball wrote, or its bundle directory, as it was written")
                }
            }
        }
    }

    /// Refuses a debug copy of the slot that is not the slot unstripped. The manifest records
    /// no hash of it, but it records the slot's: the debug copy is either the slot itself (a
    /// bundle made with the debug information kept) or, stripped as the bundler strips a slot
    /// (`Assembler.installStripped`, with this toolchain's `llvm-objcopy`, which the
    /// toolchain check requires to be the artifact's), exactly the slot.
    static func checkDebugCopy(_ debug: String, of slotSHA256: String, objcopy: String, work: String,
                               _ refuse: (String) -> BundlerError) throws(BundlerError) {
        let what = "debug copy of its current slot (debug/current/libAppCore.so.debug)"
        let digest: String
        do { digest = try FileDigest.hexDigest(ofFile: debug) } catch { throw refuse("has a \(what) that cannot be hashed: \(error.message)") }
        if digest == slotSHA256 { return }
        try? FileManager.default.removeItem(atPath: work)
        try? FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let stripped = work + "/libAppCore.so"
        let made = try Command(objcopy, ["--strip-all", "--remove-section=.swift_modhash", debug, stripped]).run()
        let strippedDigest = made.status == 0 ? try? FileDigest.hexDigest(ofFile: stripped) : nil
        guard strippedDigest == slotSHA256 else {
            throw refuse("has a \(what) that is not that slot unstripped (stripped as the bundler strips a slot, it does not match the manifest's SHA-256 of the slot): it was modified; pass the release's artifact as it was written")
        }
    }

    private static func check(_ file: String, size: Int64, sha256: String, what: String,
                              _ refuse: (String) -> BundlerError) throws(BundlerError) {
        let attributes = try? FileManager.default.attributesOfItem(atPath: file)
        guard let actual = (attributes?[.size] as? NSNumber)?.int64Value else { throw refuse("has no \(what)") }
        guard actual == size else { throw refuse("has a \(what) of \(actual) bytes where its manifest records \(size) (it was modified)") }
        let digest: String
        do { digest = try FileDigest.hexDigest(ofFile: file) } catch { throw refuse("has a \(what) that cannot be hashed: \(error.message)") }
        guard digest == sha256 else { throw refuse("has a \(what) that does not match its manifest's SHA-256 (it was modified)") }
    }
}
