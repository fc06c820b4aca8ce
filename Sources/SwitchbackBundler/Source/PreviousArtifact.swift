import Foundation
import SwitchbackCore

/// The last release's bundle (a directory or the tarball `--tarball` wrote), whose current
/// slot becomes this release's previous slot without being rebuilt. Taken only after its
/// manifest checks out: the launcher's own parser reads it; the slot and every bundled
/// library match their recorded sizes and SHA-256; it was built from the commit
/// `PreviousVersion/` pins, by this toolchain, with an ABI stamp this launcher runs.
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

    /// Opens and checks the artifact at `path` (unpacking a tarball into `work`).
    static func open(_ path: String, work: String, pinned: String?, toolchain: Toolchain) throws(BundlerError) -> PreviousArtifact {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw BundlerError(.artifact, "The previous release \(path) does not exist; pass the last release's tarball or bundle directory.", path: path)
        }
        let root = isDirectory.boolValue ? path : try Archive.unpack(path, into: work)
        func refuse(_ why: String) -> BundlerError {
            BundlerError(.artifact, "The previous release \(path) \(why).", path: path)
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
