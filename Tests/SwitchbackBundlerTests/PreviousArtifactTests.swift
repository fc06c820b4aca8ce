import Foundation
@testable import SwitchbackBundler
import SwitchbackCore
import Testing

/// `--previous-from`'s artifact checks that need no release build: crafted tarballs and
/// directories with a symbolic link somewhere, and the debug copy of the slot checked against
/// the slot's SHA-256 (stripped with the toolchain's llvm-objcopy, as the bundler strips).
@Suite struct PreviousArtifactTests {
    static let objcopy = ["/opt/swift/usr/bin/llvm-objcopy", "/usr/bin/llvm-objcopy"].first { FileManager.default.isExecutableFile(atPath: $0) }
        ?? "llvm-objcopy"
    static let toolchain = Toolchain(swift: "swift", version: "test", runtimeDirectories: [], objcopy: objcopy, clang: "clang")

    func directory() throws -> String {
        let path = NSTemporaryDirectory() + "switchback-artifact-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A bundle-shaped tree: manifest, slots/current/libAppCore.so, debug/current/….debug.
    func tree(in root: String) throws {
        for folder in ["slots/current", "slots/previous", "debug/current", "lib", "bin"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        try "format=1\n".write(toFile: root + "/manifest", atomically: true, encoding: .utf8)
        try Data([0x7F, 0x45, 0x4C, 0x46]).write(to: URL(fileURLWithPath: root + "/slots/current/libAppCore.so"))
        try Data([0x7F, 0x45, 0x4C, 0x46]).write(to: URL(fileURLWithPath: root + "/debug/current/libAppCore.so.debug"))
    }

    /// Packs `root` as switchback-bundle --tarball does (the members at the top).
    func tarball(of root: String) throws -> String {
        let file = root + ".tar.gz"
        try run("/usr/bin/tar", ["-czf", file, "-C", root, "."])
        return file
    }

    func refusal(_ artifact: String) throws -> BundlerError {
        let work = try directory() + "/work"
        do {
            _ = try PreviousArtifact.open(artifact, work: work, pinned: nil, toolchain: Self.toolchain)
        } catch {
            return error
        }
        Issue.record("the artifact \(artifact) was taken")
        return BundlerError(.usage, "")
    }

    @Test func aTarballWhoseCurrentSlotDirectoryIsALinkIsRefusedNamingTheMember() throws {
        let root = try directory() + "/release"
        try tree(in: root)
        let elsewhere = try directory()
        try FileManager.default.removeItem(atPath: root + "/slots/current")
        try FileManager.default.createSymbolicLink(atPath: root + "/slots/current", withDestinationPath: elsewhere)
        let file = try tarball(of: root)
        let error = try refusal(file)
        #expect(error.code == .artifact)
        #expect(error.message == "The previous release \(file) has a symbolic link at slots/current (to \(elsewhere)); a release artifact holds only files and directories: pass the tarball switchback-bundle --tarball wrote, or its bundle directory, as it was written.")
    }

    @Test func aDebugFileThatIsALinkToARootOnlyFileIsRefused() throws {
        let root = try directory() + "/release"
        try tree(in: root)
        try FileManager.default.removeItem(atPath: root + "/debug/current/libAppCore.so.debug")
        try FileManager.default.createSymbolicLink(atPath: root + "/debug/current/libAppCore.so.debug", withDestinationPath: "/etc/shadow")
        for artifact in [root, try tarball(of: root)] {
            let error = try refusal(artifact)
            #expect(error.code == .artifact)
            #expect(error.message == "The previous release \(artifact) has a symbolic link at debug/current/libAppCore.so.debug (to /etc/shadow); a release artifact holds only files and directories: pass the tarball switchback-bundle --tarball wrote, or its bundle directory, as it was written.")
        }
    }

    /// A slot file that is a link says so (it used to be "it was modified").
    @Test func aSlotFileThatIsALinkIsCalledALink() throws {
        let root = try directory() + "/release"
        try tree(in: root)
        try FileManager.default.moveItem(atPath: root + "/slots/current/libAppCore.so", toPath: root + "/slots/real.so")
        try FileManager.default.createSymbolicLink(atPath: root + "/slots/current/libAppCore.so", withDestinationPath: "../real.so")
        let file = try tarball(of: root)
        let error = try refusal(file)
        #expect(error.message == "The previous release \(file) has a symbolic link at slots/current/libAppCore.so (to ../real.so); a release artifact holds only files and directories: pass the tarball switchback-bundle --tarball wrote, or its bundle directory, as it was written.")
    }

    @Test func aFIFOInTheArtifactIsRefused() throws {
        let root = try directory() + "/release"
        try tree(in: root)
        #expect(mkfifo(root + "/lib/libswiftCore.so", 0o644) == 0)
        let error = try refusal(root)
        #expect(error.message == "The previous release \(root) has a member lib/libswiftCore.so that is neither a file nor a directory; a release artifact holds only files and directories: pass the tarball switchback-bundle --tarball wrote, or its bundle directory, as it was written.")
    }

    /// The debug copy is checked against the slot's SHA-256: the slot unstripped passes (as
    /// does a copy equal to the slot, a bundle built with the debug information kept); a
    /// modified one (here: another build's) is refused with a sentence. The manifest records
    /// no hash of the debug copy itself, so a change only in its debug sections is not seen.
    @Test func theDebugCopyMustBeTheSlotUnstripped() throws {
        let work = try directory()
        try "int answer(void) { return 42; }\n".write(toFile: work + "/a.c", atomically: true, encoding: .utf8)
        try run("/usr/bin/cc", ["-g", "-shared", "-fPIC", "-o", work + "/libAppCore.so.debug", work + "/a.c"])
        try run(Self.objcopy, ["--strip-all", "--remove-section=.swift_modhash", work + "/libAppCore.so.debug", work + "/libAppCore.so"])
        let slotSHA256 = try FileDigest.hexDigest(ofFile: work + "/libAppCore.so")
        func refuse(_ why: String) -> BundlerError { BundlerError(.artifact, "The previous release A \(why).") }
        try PreviousArtifact.checkDebugCopy(work + "/libAppCore.so.debug", of: slotSHA256, objcopy: Self.objcopy, work: work + "/strip", refuse)
        try PreviousArtifact.checkDebugCopy(work + "/libAppCore.so", of: slotSHA256, objcopy: Self.objcopy, work: work + "/strip", refuse)

        // A debug copy of another build (its code differs by one constant).
        try "int answer(void) { return 43; }\n".write(toFile: work + "/a.c", atomically: true, encoding: .utf8)
        try run("/usr/bin/cc", ["-g", "-shared", "-fPIC", "-o", work + "/libAppCore.so.debug", work + "/a.c"])
        let error = #expect(throws: BundlerError.self) {
            try PreviousArtifact.checkDebugCopy(work + "/libAppCore.so.debug", of: slotSHA256, objcopy: Self.objcopy, work: work + "/strip", refuse)
        }
        #expect(error?.code == .artifact)
        #expect(error?.message == "The previous release A has a debug copy of its current slot (debug/current/libAppCore.so.debug) that is not that slot unstripped (stripped as the bundler strips a slot, it does not match the manifest's SHA-256 of the slot): it was modified; pass the release's artifact as it was written.")
    }
}
