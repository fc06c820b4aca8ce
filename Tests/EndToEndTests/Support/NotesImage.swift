import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The image `Examples/NotesServer/Dockerfile` makes, built once per run by podman from the
/// test bundle (the sample app, not the Hummingbird example: `swift test` cannot build that).
/// The Dockerfile's build stage needs `swift:6.3-bookworm`, which no registry here serves, so
/// the image is its documented target `from-bundle`: the same run stage, on the local
/// stand-in for `debian:bookworm-slim` (scripts/lib/base-image --image), with the bundle
/// built on the host as the build context. Built offline (`--network=none`): the base already
/// holds libssl3 and ca-certificates, so the run stage's `apt-get install` installs nothing.
///
/// The bundle is a copy of the test bundle that reads its remote directive from
/// `file:///etc/notes/directive/directive.json` (where docs/remote.md mounts the ConfigMap)
/// and trusts a key made for this run.
struct NotesImage: Sendable {
    let name: String
    let base: String
    /// The bundle the image holds, on the host (the systemd test mounts it as /opt/notes).
    let bundle: String
    /// Where the signing key and the signed directives of this run are.
    let directory: String
    let current: String
    let previous: String

    static let directiveURL = "file:///etc/notes/directive/directive.json"

    nonisolated(unsafe) private static let built: Result<NotesImage, any Error> = Result { try NotesImage() }

    /// The one image of this run, built by the first test that asks.
    static func shared() throws -> NotesImage {
        do {
            return try built.get()
        } catch {
            // Every test that needs it fails, not only the one that built it first.
            Issue.record("The image of Examples/NotesServer/Dockerfile could not be made: \(error)")
            throw error
        }
    }

    /// The copy `bundle` and `directory` are in, kept for the run (it is removed with it).
    private let copy: TestBundle

    private init() throws {
        base = try Podman.baseImage("SWITCHBACK_TEST_IMAGE", made: "--image")
        copy = try TestBundle()
        bundle = copy.bundle
        directory = copy.directory
        current = try copy.manifestValue("current.version")
        previous = try copy.manifestValue("previous.version")
        let made = try copy.rollbackctl("keygen", "--out", copy.directory + "/keys")
        guard made.status == 0 else { throw TestFailure("rollbackctl keygen failed: \(made)") }
        try copy.setManifestSetting("remote.keys", try RemoteDirectiveTests.Fleet.keyBody(copy.directory + "/keys/directive.pub"))
        try copy.setManifestSetting("remote.url", Self.directiveURL)
        // The copy's files are the bundle's owner's (root); the image's COPY makes them root's anyway.
        try shell("chmod", "0755", copy.directory)

        name = "localhost/switchback-test-notes:latest"
        // The last run's image, so that it does not stay behind untagged; its cached layers stay.
        _ = try Podman.run("rmi", name)
        let clock = ContinuousClock.now
        try Podman.check(["build", "--network=none", "--target", "from-bundle", "--build-arg", "RUN_IMAGE=\(base)",
                          "-f", Podman.repository + "/Examples/NotesServer/Dockerfile", "-t", name, bundle], deadline: 600)
        let buildSeconds = seconds(since: clock)
        let image = try Podman.imageSize(name)
        let baseSize = try Podman.imageSize(base)
        let bundleBytes = try shell("du", "-scb", bundle + "/bin", bundle + "/lib", bundle + "/slots", bundle + "/manifest")
            .stdout.split(separator: "\n").last.flatMap { Int($0.split(separator: "\t").first ?? "") } ?? 0
        print(String(format: "NotesImage: %@ is %.1f MB: the base %@ %.1f MB, the bundle (bin, lib, slots, manifest) %.1f MB, the rest %.1f MB; built by podman in %.1f s",
                     name, Double(image) / 1e6, base, Double(baseSize) / 1e6, Double(bundleBytes) / 1e6,
                     Double(image - baseSize - bundleBytes) / 1e6, buildSeconds))
    }

    /// A directive envelope signed with this run's key (`rollbackctl sign`), as text; the
    /// envelope made first for a serial.
    func signed(_ decision: String, serial: Int) throws -> String {
        let out = directory + "/signed-\(serial)-\(decision).json"
        // The same serial is the same envelope: a second play publishes what the first did.
        if let made = try? String(contentsOfFile: out, encoding: .utf8) { return made }
        let result = try runProcess(bundle + "/bin/rollbackctl", [
            "sign", "--key", directory + "/keys/directive.key", "--decision", decision, "--applies-to", current,
            "--serial", String(serial), "--reason", "\(decision) by the ConfigMap (serial \(serial))", "--out", out,
        ])
        guard result.status == 0 else { throw TestFailure("rollbackctl sign failed: \(result)") }
        return try String(contentsOfFile: out, encoding: .utf8)
    }
}
