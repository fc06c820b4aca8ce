import Foundation
import RollbackCtlKit
import SwitchbackCore
import Testing

/// A private copy of the bundle built by scripts/test (or $SWITCHBACK_TEST_BUNDLE), with
/// its own state directory, so each test can break files without touching the others. The
/// copy is removed when the last reference goes (a bundle with its debug files is 50-110 MB,
/// and a run makes a few hundred).
final class TestBundle: Sendable {
    /// The bundle every test copies: built before `swift test` starts (SwiftPM holds a lock
    /// on .build for the whole run, so a test must not build it).
    static let source: String = {
        if let path = ProcessInfo.processInfo.environment["SWITCHBACK_TEST_BUNDLE"] { return path }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
        return root + "/.build-test/bundle"
    }()

    let directory: String
    var bundle: String { directory + "/bundle" }
    var state: String { directory + "/state" }

    /// Two real releases made by scripts/lib/release-fixture (scripts/test builds them):
    /// `1.2.0` and `1.3.0`, whose previous slot holds that same 1.2.0 build.
    static let releases: String = {
        if let path = ProcessInfo.processInfo.environment["SWITCHBACK_TEST_RELEASES"] { return path }
        return FileSystem.parentDirectory(of: source) + "/releases"
    }()

    init(copying source: String = TestBundle.source) throws {
        guard FileManager.default.fileExists(atPath: source + "/manifest") else {
            Issue.record("No bundle at \(source): run the tests with scripts/test, which builds it first.")
            throw CancellationError()
        }
        directory = try makeTemporaryDirectory()
        try shell("cp", "-a", source, bundle)
    }

    deinit { removeTemporaryDirectory(directory) }

    /// A release of the two in `releases`, installed with its own state directory.
    convenience init(release version: String) throws {
        try self.init(copying: Self.releases + "/" + version)
    }

    /// Replaces the installed bundle with a copy of `source` (the next release), keeping
    /// the state directory: what a deploy does.
    func deploy(_ source: String) throws {
        try shell("rm", "-rf", bundle)
        try shell("cp", "-a", source, bundle)
    }

    /// The file of a slot.
    func slotPath(_ slot: BuildSlot) -> String { bundle + "/slots/\(slot.rawValue)/libAppCore.so" }

    /// The manifest's value for `key`.
    func manifestValue(_ key: String) throws -> String {
        let manifest = try String(contentsOfFile: bundle + "/manifest", encoding: .utf8)
        guard let line = manifest.split(separator: "\n").first(where: { $0.hasPrefix(key + "=") }) else {
            throw TestFailure("no \(key) in the manifest")
        }
        return String(line.dropFirst(key.count + 1))
    }

    /// Rewrites the manifest's size and SHA-256 of `slot` to match its file now, so a test
    /// can reach the checks after mapping (symbol, ABI stamp).
    func acceptSlotFileInManifest(_ slot: BuildSlot) throws {
        let path = slotPath(slot)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        let sha = try FileDigest.hexDigest(ofFile: path)
        let manifest = try String(contentsOfFile: bundle + "/manifest", encoding: .utf8)
        let lines = manifest.split(separator: "\n").map { line -> String in
            if line.hasPrefix("\(slot.rawValue).size=") { return "\(slot.rawValue).size=\(size)" }
            if line.hasPrefix("\(slot.rawValue).sha256=") { return "\(slot.rawValue).sha256=\(sha)" }
            return String(line)
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: bundle + "/manifest", atomically: true, encoding: .utf8)
    }

    func launcher(_ arguments: String..., environment: [String: String] = [:]) throws -> ProcessResult {
        try run(bundle + "/bin/launcher", arguments, environment: environment)
    }

    func rollbackctl(_ arguments: String..., environment: [String: String] = [:]) throws -> ProcessResult {
        try run(bundle + "/bin/rollbackctl", arguments, environment: environment)
    }

    func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "SWITCHBACK_SLOT")
        env["SWITCHBACK_STATE_DIR"] = state
        env.merge(environment) { $1 }
        return try runProcess(executable, arguments, environment: env)
    }

    /// The history as `rollbackctl history --json` reports it.
    func history() throws -> [HistoryEntry] {
        let result = try rollbackctl("history", "--json")
        try #require(result.status == 0, "history failed: \(result.stderr)")
        return try JSONDecoder().decode([HistoryEntry].self, from: Data(result.stdout.utf8))
    }

    /// `rollbackctl status --json`.
    func status(environment: [String: String] = [:]) throws -> StatusDocument {
        let result = try rollbackctl("status", "--json", environment: environment)
        try #require(result.status == 0, "status failed: \(result.stderr)")
        return try JSONDecoder().decode(StatusDocument.self, from: Data(result.stdout.utf8))
    }

    var currentVersion: String { (try? manifestValue("current.version")) ?? "?" }
    var previousVersion: String { (try? manifestValue("previous.version")) ?? "?" }
    /// The start of the sample app's greeting from `slot` (what follows differs by version:
    /// 1.2.0 adds ": first run", ": upgraded from 1.1.0", ...).
    func greeting(_ slot: BuildSlot) -> String {
        "Hello from the Switchback sample app, version \(slot == .current ? currentVersion : previousVersion) (\(slot.rawValue) slot)"
    }
}

extension TestBundle {
    /// Adds or replaces a setting in the manifest (settings are not part of the slot checks).
    func setManifestSetting(_ key: String, _ value: String) throws {
        let path = bundle + "/manifest"
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.removeAll { $0.hasPrefix(key + "=") }
        lines.append("\(key)=\(value)")
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// `status --json`'s health object of `slot`.
    func health(_ slot: String) throws -> StatusDocument.Health {
        try #require(try status().slots[slot]?.health)
    }
}
