import Foundation
import Testing
@testable import SwitchbackCore

/// The strict-mode rules on a real file system (a private directory under /tmp).
@Suite struct StrictModesTests {
    let root: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/switchback-strict-XXXXXX").utf8CString)
        guard let pointer = mkdtemp(&template) else { throw SwitchbackError(.ioFailure, "mkdtemp failed") }
        root = URL(fileURLWithPath: String(cString: pointer)).resolvingSymlinksInPath().path
    }

    func directory(_ name: String, mode: mode_t) -> String {
        let path = root + "/" + name
        mkdir(path, 0o700)
        chmod(path, mode)
        return path
    }

    func file(_ path: String, mode: mode_t = 0o600) throws {
        try FileSystem.replace(path, with: Array("x\n".utf8), durable: false)
        chmod(path, mode)
    }

    @Test func aRelativeStateDirectoryFromTheEnvironmentIsRefused() throws {
        #expect(throws: SwitchbackError.self) { try StateDirectory.resolve(appID: "id") { ["SWITCHBACK_STATE_DIR": "state"][$0] } }
        #expect(throws: SwitchbackError.self) { try StateDirectory.resolve(appID: "id") { ["HOME": "home"][$0] } }
        do {
            _ = try StateDirectory.resolve(appID: "id") { ["SWITCHBACK_STATE_DIR": "state"][$0] }
        } catch {
            #expect(error.code == .invalidArgument)
        }
        let explicit = try StateDirectory.resolve(explicit: "typed", appID: "id") { _ in nil }
        #expect(explicit.path.hasPrefix("/") && explicit.path.hasSuffix("/typed"))
    }

    @Test func linksAreResolvedAndEveryStepIsChecked() throws {
        let kept = directory("kept", mode: 0o755)
        try file(kept + "/lib.so", mode: 0o644)
        symlink(kept + "/lib.so", root + "/link.so")
        symlink("link.so", root + "/relative.so")
        #expect(try StrictModes.resolve(root + "/relative.so", what: "test file") == kept + "/lib.so")
        #expect(try StrictModes.resolve(root + "/missing.so", what: "test file") == nil)

        let open = directory("open", mode: 0o777)
        try file(open + "/lib.so", mode: 0o644)
        symlink(open + "/lib.so", root + "/into-open.so")
        #expect { try StrictModes.resolve(root + "/into-open.so", what: "test file") } throws: { error in
            (error as? SwitchbackError)?.code == .insecurePermissions
                && (error as? SwitchbackError)?.message == "The directory of the test file \(open) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(open)'."
        }
    }

    @Test func aStickyAncestorIsAcceptedButNotAsTheHolderOfAFile() throws {
        let sticky = directory("sticky", mode: 0o1777)
        let inside = sticky + "/inside"
        mkdir(inside, 0o755)
        try file(inside + "/f", mode: 0o644)
        try file(sticky + "/f", mode: 0o644)
        #expect(try StrictModes.resolve(inside + "/f", what: "test file") == inside + "/f")
        #expect(throws: SwitchbackError.self) { try StrictModes.resolve(sticky + "/f", what: "test file") }
        #expect(try StrictModes.checkDirectory(inside, what: "state directory"))
        let open = directory("open", mode: 0o777)
        mkdir(open + "/inside", 0o755)
        #expect(throws: SwitchbackError.self) { try StrictModes.checkDirectory(open + "/inside", what: "state directory") }
    }

    @Test func trustedReadsRefuseLinksAndFilesOthersCanWrite() throws {
        try file(root + "/target")
        symlink(root + "/target", root + "/link")
        #expect { try FileSystem.read(root + "/link") } throws: { ($0 as? SwitchbackError)?.code == .insecurePermissions }
        #expect { try FileSystem.appendDurably(root + "/link", [0x41]) } throws: { ($0 as? SwitchbackError)?.code == .insecurePermissions }
        try FileSystem.replace(root + "/link", with: Array("new\n".utf8))
        #expect(try FileSystem.read(root + "/target") == Array("x\n".utf8), "replace wrote through the link")
        #expect(try FileSystem.read(root + "/link") == Array("new\n".utf8))

        try file(root + "/open", mode: 0o666)
        #expect { try FileSystem.read(root + "/open") } throws: { ($0 as? SwitchbackError)?.code == .insecurePermissions }
        #expect(try FileSystem.read(root + "/absent") == nil)
    }

    @Test func waitingForALockIsBounded() throws {
        let path = root + "/lock"
        let held = try FileLock(path: path)
        let started = Date()
        #expect { try FileLock(path: path, timeout: 0.3) } throws: { ($0 as? SwitchbackError)?.code == .lockFailed }
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.3 && waited < 3, "waited \(waited) s")
        // This process already waited the bound out for this lock: it does not wait again.
        let again = Date()
        #expect { try FileLock(path: path, timeout: 5) } throws: { ($0 as? SwitchbackError)?.code == .lockFailed }
        #expect(Date().timeIntervalSince(again) < 1)
        #expect(try FileLock.acquire(path: path, wait: false) == nil)
        withExtendedLifetime(held) {}
        symlink(path, root + "/lock-link")
        #expect { try FileLock(path: root + "/lock-link") } throws: { ($0 as? SwitchbackError)?.code == .insecurePermissions }
    }
}

@Suite struct FileModeTests {
    @Test func numbersAreTheSystemsMacros() {
        #expect(FileMode.typeMask == S_IFMT)
        #expect(FileMode.regular == S_IFREG)
        #expect(FileMode.directory == S_IFDIR)
        #expect(FileMode.symbolicLink == S_IFLNK)
        #expect(FileMode.sharedWrite == mode_t(S_IWGRP | S_IWOTH))
        #expect(FileMode.sticky == mode_t(S_ISVTX))
        var info = stat()
        #expect(lstat("/", &info) == 0 && FileMode.type(info) == FileMode.directory)
        #expect(lstat("/proc/self", &info) == 0 && FileMode.type(info) == FileMode.symbolicLink)
        #expect(lstat("/proc/self/exe", &info) == 0 && FileMode.type(info) == FileMode.symbolicLink)
        #expect(stat("/proc/self/exe", &info) == 0 && FileMode.type(info) == FileMode.regular)
    }
}
