import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The sample's bundle on a host that has only what the bundle says a host needs: a
/// `debootstrap --variant=minbase` Debian 12 root plus libssl3 (scripts/lib/minimal-rootfs),
/// entered with chroot as the unprivileged user 10001, with no Swift toolchain, no python3
/// and no libcurl. (ContainerImageTests runs the image of the Dockerfile itself, with podman.)
@Suite struct MinimalRootTests {
    @Test func runsRollsBackAndRollsForwardAsAnUnprivilegedUser() throws {
        let install = try RootInstall()
        defer { install.remove() }
        let current = try install.manifestValue("current.version")
        let previous = try install.manifestValue("previous.version")

        try #require(try install.launcher("version").expect(stdout: current + "\n"),
                     "the bundle does not run in the minimal root; the rest of this test would only repeat that")
        _ = try install.launcher().expect(stdout: "Hello from the Switchback sample app, version \(current) (current slot): welcome back.\n")

        // The first start created the notes store in format 2: it is converted back first.
        _ = try install.rollbackctl("rollback", "--reason", "x").expect(stdout: """
            Data: reverted migration step notes-v2 so that \(previous) can read it.
            Rolled back: the next start runs the previous slot (\(previous)).

            """)
        _ = try install.launcher("version").expect(stdout: previous + "\n")

        _ = try install.rollbackctl("rollforward").expect(stdout: """
            Rolled forward: the next start runs the current slot (\(current)).
            The current build (\(current)) was bad (an operator rolled back from it: x); it is back on trial with 3 tries.

            """)
        _ = try install.launcher("version").expect(stdout: current + "\n")

        let status = try install.status()
        #expect(status.activeSlot == "current")
        #expect(status.rollback == false)
        #expect(status.slots["current"]?.version == current)
        #expect(status.slots["previous"]?.version == previous)
    }

    @Test func theBundleStillRunsAfterItIsMoved() throws {
        var install = try RootInstall()
        defer { install.remove() }
        let current = try install.manifestValue("current.version")
        try #require(try install.launcher("version").expect(stdout: current + "\n"),
                     "the bundle does not run in the minimal root before it is moved")

        // Elsewhere at another depth: a bundle that named a path of its own, relative or
        // absolute, would now miss it.
        try install.moveBundle(to: "moved/to/another/place")
        _ = try install.launcher("version").expect(stdout: current + "\n")
        let status = try install.status()
        #expect(status.activeSlot == "current")
        #expect(status.slots["current"]?.version == current)

        // And a first start from the new place (its slot hashed with the host's libcrypto).
        let fresh = try install.makeStateDirectory("fresh-state")
        _ = try install.launcher("version", stateDirectory: fresh).expect(stdout: current + "\n")
        #expect(try install.status(stateDirectory: fresh).activeSlot == "current")
    }

    /// So that none of the tests above can pass on a root that carries what a slim host lacks.
    @Test func theRootIsMinimal() throws {
        let root = try RootInstall.rootFilesystem()
        let fileManager = FileManager.default
        #expect(fileManager.fileExists(atPath: root + "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"),
                "the root lacks libssl3's libcrypto.so.3, which the bundle lists as the host's")
        for absent in ["/usr/bin/python3", "/usr/bin/python3.11", "/opt/swift", "/usr/bin/swift", "/usr/lib/swift"] {
            #expect(!fileManager.fileExists(atPath: root + absent), "\(root)\(absent) exists: the root is not minimal")
        }
        // Anywhere but in the bundles tests copied in (theirs and other tests' at this moment).
        let found = try shell("find", root, "-xdev", "(", "-path", root + "/opt/sb-*", "-prune", ")", "-o",
                              "(", "-name", "libswiftCore.so*", "-o", "-name", "libFoundation*.so*",
                              "-o", "-name", "libcurl*.so*", "-o", "-name", "python3*", ")", "-print")
        #expect(found.stdout == "", "the root is not minimal: it holds\n\(found.stdout)")
    }
}

/// A copy of `TestBundle.source` installed in the minimal root at /opt/sb-XXXXXX/bundle, with a
/// state directory /opt/sb-XXXXXX/state owned by the user that runs it (10001:10001, 0700).
/// Every command runs as `chroot --userspec=10001:10001 ROOT env -i ...`, so nothing of the
/// test's environment reaches it, in its own mount namespace with /proc mounted in the root
/// (a container or a host has /proc; the launcher maps a slot through /proc/self/fd).
private struct RootInstall {
    /// The root's path on this machine.
    let root: String
    /// The install's directory as the root sees it: /opt/sb-XXXXXX.
    let directory: String
    /// The bundle's directory as the root sees it.
    private(set) var bundle: String
    var state: String { directory + "/state" }

    /// The path in SWITCHBACK_TEST_ROOTFS, checked; a test fails (never skips) without it.
    static func rootFilesystem() throws -> String {
        guard let root = ProcessInfo.processInfo.environment["SWITCHBACK_TEST_ROOTFS"], !root.isEmpty else {
            Issue.record("SWITCHBACK_TEST_ROOTFS is not set: run the tests with scripts/test, which makes the minimal root with scripts/lib/minimal-rootfs and sets it.")
            throw CancellationError()
        }
        guard FileManager.default.isExecutableFile(atPath: root + "/bin/sh") else {
            Issue.record("SWITCHBACK_TEST_ROOTFS is \(root), which is not a root filesystem (no /bin/sh): run scripts/lib/minimal-rootfs, or scripts/test.")
            throw CancellationError()
        }
        guard geteuid() == 0 else {
            Issue.record("The minimal-root tests enter \(root) with chroot, which needs root; run scripts/test as root.")
            throw CancellationError()
        }
        return root
    }

    init() throws {
        root = try Self.rootFilesystem()
        let source = TestBundle.source
        guard FileManager.default.fileExists(atPath: source + "/manifest") else {
            Issue.record("No bundle at \(source): run the tests with scripts/test, which builds it first.")
            throw CancellationError()
        }
        var template = Array((root + "/opt/sb-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp in \(root)/opt failed: errno \(errno)") }
        directory = String(String(cString: made).dropFirst(root.count))
        bundle = directory + "/bundle"
        // mkdtemp makes it 0700: the user 10001 has to reach the bundle through it.
        try shell("chmod", "0755", root + directory)
        try shell("cp", "-a", source, root + bundle)
        _ = try makeStateDirectory("state")
    }

    /// Removes the install: the bundle and every state directory.
    func remove() {
        _ = try? shell("rm", "-rf", "--one-file-system", root + directory)
    }

    /// A new state directory `name` in the install, owned by 10001:10001, mode 0700; its path
    /// as the root sees it.
    func makeStateDirectory(_ name: String) throws -> String {
        try shell("install", "-d", "-o", "10001", "-g", "10001", "-m", "0700", root + directory + "/" + name)
        return directory + "/" + name
    }

    /// Moves the bundle with `mv` to `relativePath` in the install (parents made as needed).
    mutating func moveBundle(to relativePath: String) throws {
        let destination = directory + "/" + relativePath
        try shell("mkdir", "-p", root + (destination as NSString).deletingLastPathComponent)
        try shell("mv", root + bundle, root + destination)
        bundle = destination
    }

    /// The bundle's manifest value for `key`.
    func manifestValue(_ key: String) throws -> String {
        let manifest = try String(contentsOfFile: root + bundle + "/manifest", encoding: .utf8)
        guard let line = manifest.split(separator: "\n").first(where: { $0.hasPrefix(key + "=") }) else {
            throw TestFailure("no \(key)= in \(root)\(bundle)/manifest")
        }
        return String(line.dropFirst(key.count + 1))
    }

    func launcher(_ arguments: String..., stateDirectory: String? = nil) throws -> ProcessResult {
        try run("bin/launcher", arguments, stateDirectory: stateDirectory ?? state)
    }

    func rollbackctl(_ arguments: String..., stateDirectory: String? = nil) throws -> ProcessResult {
        try run("bin/rollbackctl", arguments, stateDirectory: stateDirectory ?? state)
    }

    /// `rollbackctl status --json`, decoded.
    func status(stateDirectory: String? = nil) throws -> StatusReport {
        let result = try rollbackctl("status", "--json", stateDirectory: stateDirectory)
        try #require(result.status == 0 && result.stderr.isEmpty, "rollbackctl status --json: \(result)")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(StatusReport.self, from: Data(result.stdout.utf8))
    }

    /// Runs `program` of the bundle in the root as 10001:10001 with exactly
    /// SWITCHBACK_STATE_DIR and PATH in its environment.
    private func run(_ program: String, _ arguments: [String], stateDirectory: String) throws -> ProcessResult {
        try runProcess("/usr/bin/unshare", [
            "--mount-proc=\(root)/proc",
            "/usr/sbin/chroot", "--userspec=10001:10001", root,
            "/usr/bin/env", "-i", "SWITCHBACK_STATE_DIR=\(stateDirectory)", "PATH=/usr/bin:/bin",
            bundle + "/" + program,
        ] + arguments, environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
    }
}

/// What the tests read of `rollbackctl status --json`.
private struct StatusReport: Decodable {
    struct Slot: Decodable { var version: String }
    var activeSlot: String
    var rollback: Bool
    var source: String
    var reason: String?
    var slots: [String: Slot]
}

private extension ProcessResult {
    /// Records an issue unless it exited 0 with exactly `stdout` and nothing on stderr; true
    /// when it did.
    func expect(stdout expected: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let matches = status == 0 && !signaled && stdout == expected && stderr.isEmpty
        #expect(matches, "expected exit 0, stdout \(expected.debugDescription) and no stderr; got \(self)", sourceLocation: sourceLocation)
        return matches
    }
}
