import Foundation
import Testing

/// scripts/bundle's failure paths that need no build.
@Suite struct BundleScriptTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    @Test func aShallowCloneSaysThePinnedCommitIsMissing() throws {
        let directory = try makeTemporaryDirectory() + "/clone"
        try shell("git", "clone", "-q", "--depth", "1", "file://" + Self.repository, directory)
        let pinned = try shell("git", "-C", directory, "ls-files", "-s", "PreviousVersion").stdout
            .split(separator: " ").dropFirst().first.map(String.init) ?? "?"
        let result = try runProcess(directory + "/scripts/bundle", ["--out", directory + "/dist"])
        #expect(result.status == 1)
        #expect(result.stderr == "Error: PreviousVersion/ is pinned to \(pinned), which this clone does not have; this is a shallow clone: run 'git fetch --unshallow' (or clone without --depth), then retry.\n")
        #expect(!FileManager.default.fileExists(atPath: directory + "/dist"))
    }

    /// The launcher links only what it uses: each runtime library it loads costs every start.
    @Test func theLauncherLinksNeitherConcurrencyNorStringProcessing() throws {
        let ldd = try shell("ldd", TestBundle.source + "/bin/launcher")
        #expect(ldd.status == 0)
        #expect(ldd.stdout.contains("libswiftCore.so"))
        #expect(!ldd.stdout.contains("libswift_Concurrency"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libswift_StringProcessing"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libFoundation"), "\(ldd.stdout)")
    }

    /// Shipped slots are stripped and reproducible: the debug files stay beside them.
    @Test func shippedSlotsCarryNoDebugInformation() throws {
        for slot in ["current", "previous"] {
            let sections = try shell("readelf", "-S", "-W", TestBundle.source + "/slots/\(slot)/libAppCore.so")
            #expect(sections.status == 0)
            #expect(!sections.stdout.contains(".debug_info"), "\(slot)")
            #expect(!sections.stdout.contains(".swift_modhash"), "\(slot)")
            #expect(FileManager.default.fileExists(atPath: TestBundle.source + "/debug/\(slot)/libAppCore.so.debug"))
        }
    }

    @Test func unknownArgumentsAreUsageErrors() throws {
        let result = try runProcess(Self.repository + "/scripts/bundle", ["--outt", "x"])
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("Error: unknown argument '--outt'.\nUsage: scripts/bundle"))
    }

    @Test func pinPreviousRefusesWhatIsNotACommit() throws {
        let result = try runProcess(Self.repository + "/scripts/pin-previous", ["no-such-revision"])
        #expect(result.status == 1)
        #expect(result.stderr == "Error: 'no-such-revision' is not a commit of this repository.\n")
    }
}
