import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 30's third path through the real binaries: a new release installed at the bundle's
/// path while the supervisor serves, under load. The supervisor notices the new manifest
/// (Supervisor+Release.swift) and switches to the new build the usual way: stop-first when
/// its steps leave data the serving build cannot read, start-first for an expand step.
/// Releases from the release fixture: 1.1.9 (notes in format 1), 1.2.0-after-1.1.9 (its
/// `notes-v2` step, reader floor 1.2.0; previous slot that same 1.1.9 build), 1.2.0 and 1.3.0
/// (previous slot that same 1.2.0 build).
@Suite(.serialized) struct LiveSwitchReleaseTests {
    /// `release` installed and supervised on a free port, serving, with two notes it wrote.
    static func server(_ release: String, environment: [String: String] = [:]) throws -> (TestBundle, Int, SupervisedLauncher) {
        let t = try TestBundle(release: release)
        let port = try unusedLocalPort()
        try configure(t, port: port)
        for note in ["before one", "before two"] {
            let added = try t.launcher("note", "add", note, environment: ["SWITCHBACK_SUPERVISE": "0"])
            try #require(added.status == 0, "\(added)")
        }
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: environment)
        let version = try t.manifestValue("current.version")
        try #require(waitUntil(seconds: 30) { NotesClient.get(port: port, path: "/notes").version == version }, "\(app.stderr)")
        try #require(app.wait(upTo: 10) { app.record?.childReady == true })
        return (t, port, app)
    }

    /// The operator's settings, the same in every release they install.
    static func configure(_ t: TestBundle, port: Int) throws {
        try t.setManifestSetting("supervise", "true")
        try t.setManifestSetting("supervise.listen", "127.0.0.1:\(port)")
    }

    /// The next release, built elsewhere and configured like the running one: what a deploy copies in.
    static func staged(_ release: String, port: Int) throws -> TestBundle {
        let next = try TestBundle(release: release)
        try configure(next, port: port)
        return next
    }

    static func notes(port: Int) -> Set<String> {
        Set(NotesClient.get(port: port, path: "/notes").body.split(separator: "\n").map(String.init))
    }

    @Test func aReleaseInstalledUnderTheSupervisorWhoseBuildMigratesTakesOverStopFirstUnderLoad() throws {
        let (t, port, app) = try Self.server("1.1.9")
        defer { app.stop() }
        let next = try Self.staged("1.2.0-after-1.1.9", port: port)
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        try t.deploy(next.bundle)  // rm -rf, then cp -a: the bundle's directory is replaced
        let installedAt = NotesClient.nowMilliseconds()
        #expect(app.wait(upTo: 60) { app.record?.lastSwitch?.to == .current && app.record?.childReady == true }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().filter { $0.version == "1.2.0" }.count > 20 })
        let responses = client.stop()
        let record = try #require(app.record?.lastSwitch)
        print("release installed, stop-first: \(responses.count) requests, \(record.sentence); drained \((record.drainedAtMilliseconds ?? 0) - installedAt) ms after the copy ended")

        #expect(app.stderr.contains("launcher: supervisor: release 1.2.0 (current) with 1.1.9 (previous) was installed at the bundle's path; the serving build is its previous slot."), "\(app.stderr)")
        #expect(record.path == "stop-first" && record.from == .previous && record.to == .current)
        #expect(record.why == "1.2.0 migrates notes-v2, which 1.1.9 cannot read")
        try LiveSwitchDataTests.checkNoBuildReadsTheOthersFormat(responses, first: "1.1.9", then: "1.2.0", record: record)
        let added = responses.compactMap { $0.added }
        #expect(Self.notes(port: port).isSuperset(of: ["before one", "before two"] + added), "missing: \(Set(added).subtracting(Self.notes(port: port)))")
        #expect(added.count > 10)
        let paused = try #require(record.pausedMilliseconds)
        let status = try t.rollbackctl("status")
        #expect(status.stdout.contains("Last switch: stop-first, 1.1.9 → 1.2.0: 1.2.0 migrates notes-v2, which 1.1.9 cannot read; paused \(paused) ms ("), "\(status)")
        // Still this install's supervisor (SupervisorIdentity): its executable file is the old
        // release's, deleted, and the same file it started from.
        #expect(status.stdout.contains("Supervisor: pid \(app.pid), "), "\(status)")
        #expect(try t.history().contains { $0.kind == "stop_first" && $0.reason?.hasSuffix("paused \(paused) ms") == true })
        print("supervisor stderr:\n\(app.stderr)\nstatus:\n\(status.stdout)")

        // The supervisor now acts for the new release, although its own executable is the old
        // one, deleted: the new release's rollbackctl hands the rollback to it, stop-first.
        let rollback = try t.rollbackctl("rollback", "--reason", "back to 1.1.9")
        #expect(rollback.status == 0, "\(rollback)")
        #expect(rollback.stdout.contains("Data: reverted migration step notes-v2 so that 1.1.9 can read it."), "\(rollback)")
        #expect(!rollback.stderr.contains("Note:"), "\(rollback)")
        #expect(app.wait(upTo: 60) { app.record?.lastSwitch?.to == .previous && app.record?.childReady == true }, "\(app.stderr)")
        #expect(app.record?.lastSwitch?.why == "the data (reader floor 1.2.0) must be converted back for 1.1.9")
        #expect(NotesClient.get(port: port, path: "/notes").format == "1")
    }

    @Test func aReleaseWhoseMigrationFailsLeavesTheServingBuildServingOnItsOwnFormatWithEveryNote() throws {
        let (t, port, app) = try Self.server("1.1.9")
        defer { app.stop() }
        // 1.2.0's notes-v2 fails (Sources/AppCore/SampleApp+Migrations.swift).
        try "1.2.0\n".write(toFile: t.state + "/data/fail-migration", atomically: true, encoding: .utf8)
        let next = try Self.staged("1.2.0-after-1.1.9", port: port)
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        try t.deploy(next.bundle)
        #expect(app.wait(upTo: 60) { app.record?.switchFailure != nil && app.record?.childSlot == .previous && app.record?.childReady == true }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 + 50 })
        let responses = client.stop()
        #expect(responses.filter(\.refused).isEmpty, "refused: \(responses.filter(\.refused).count)")
        #expect(responses.allSatisfy { $0.refused || $0.status == 200 }, "\(responses.filter { $0.status != 200 }.prefix(5))")
        #expect(responses.allSatisfy { $0.version == "1.1.9" && $0.format == "1" }, "only 1.1.9 answered, in its format")
        let added = responses.compactMap { $0.added }
        #expect(Self.notes(port: port).isSuperset(of: ["before one", "before two"] + added))
        let reason = try #require(app.record?.switchFailure?.reason)
        #expect(reason.hasPrefix("the switch to the current slot (1.2.0) did not happen: it exited with code "), "\(reason)")
        #expect(reason.hasSuffix("before it was ready; the previous slot (1.1.9) serves again, on data in its own format"), "\(reason)")
        #expect(try t.history().contains { $0.kind == "switch_failed" && $0.reason == reason })
        print("release whose migration fails: \(responses.count) requests; supervisor stderr:\n\(app.stderr)")
    }

    /// 1.2.0 serving, started through a symlink (`current -> release-1.2.0`); 1.3.0 installed
    /// by flipping it, with the sample's `notes-index` step at 1.3.0 (`SAMPLE_EXPAND_STEP`).
    static func flipToNextRelease(expandStep: String) throws -> (TestBundle, SupervisedLauncher, [NotesClient.Response]) {
        let t = try TestBundle(release: "1.2.0")
        let port = try unusedLocalPort()
        try Self.configure(t, port: port)
        try shell("mv", t.bundle, t.directory + "/release-1.2.0")
        try shell("ln", "-s", "release-1.2.0", t.bundle)
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: ["SAMPLE_EXPAND_STEP": expandStep])
        try #require(waitUntil(seconds: 30) { NotesClient.get(port: port, path: "/notes").version == "1.2.0" }, "\(app.stderr)")
        try #require(app.wait(upTo: 10) { app.record?.childReady == true })
        let next = try Self.staged("1.3.0", port: port)
        try shell("cp", "-a", next.bundle, t.directory + "/release-1.3.0")
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        try shell("ln", "-s", "release-1.3.0", t.directory + "/next-link")
        try shell("mv", "-T", t.directory + "/next-link", t.bundle)  // an atomic flip
        #expect(app.wait(upTo: 60) { app.record?.childSlot == .current && app.record?.childReady == true && app.record?.candidatePID == nil
            && app.record?.pause == nil }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().filter { $0.version == "1.3.0" }.count > 20 })
        let responses = client.stop()
        #expect(responses.filter(\.refused).isEmpty && responses.allSatisfy { $0.refused || $0.status == 200 }, "\(responses.filter { $0.status != 200 }.prefix(5))")
        let added = responses.compactMap { $0.added }
        #expect(Self.notes(port: port).isSuperset(of: added), "missing: \(Set(added).subtracting(Self.notes(port: port)))")
        #expect(FileManager.default.fileExists(atPath: t.state + "/data/notes.index"), "1.3.0 ran notes-index")
        #expect(app.stderr.contains("launcher: supervisor: release 1.3.0 (current) with 1.2.0 (previous) was installed at the bundle's path; the serving build is its previous slot."), "\(app.stderr)")
        return (t, app, responses)
    }

    @Test func aReleaseFlippedInWhoseOnlyStepIsAnExpandStepKeepsTheSwitchStartFirst() throws {
        let (_, app, responses) = try Self.flipToNextRelease(expandStep: "1.3.0:1.2.0")
        defer { app.stop() }
        #expect(app.stderr.contains("the persisted choice now selects the current slot; starting it beside the previous slot (pid "), "\(app.stderr)")
        #expect(app.record?.lastSwitch == nil, "no stop-first switch: \(String(describing: app.record?.lastSwitch))")
        #expect(Set(responses.compactMap(\.version)) == ["1.2.0", "1.3.0"])
    }

    @Test func theSameReleaseWithTheStepWithoutAFloorTakesOverStopFirst() throws {
        let (_, app, responses) = try Self.flipToNextRelease(expandStep: "1.3.0")
        defer { app.stop() }
        let record = try #require(app.record?.lastSwitch)
        #expect(record.path == "stop-first" && record.from == .previous && record.to == .current)
        #expect(record.why == "1.3.0 migrates notes-index, which 1.2.0 cannot read")
        try LiveSwitchDataTests.checkNoBuildReadsTheOthersFormat(responses, first: "1.2.0", then: "1.3.0", record: record)
    }

    @Test func aBrokenManifestOrAnotherAppsBundleIsNotAdoptedAndTheNextGoodReleaseIs() throws {
        let t = try TestBundle(release: "1.2.0")
        let port = try unusedLocalPort()
        try Self.configure(t, port: port)
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"])
        defer { app.stop() }
        try #require(waitUntil(seconds: 30) { NotesClient.get(port: port, path: "/notes").version == "1.2.0" }, "\(app.stderr)")
        let child = try #require(app.record?.childPID)

        let broken = try Self.staged("1.3.0", port: port)
        try "format=1\nnot a manifest\n".write(toFile: broken.bundle + "/manifest", atomically: true, encoding: .utf8)
        try t.deploy(broken.bundle)
        #expect(app.wait(upTo: 30) { app.stderr.contains("launcher: supervisor: A new manifest at \(t.bundle) was not adopted (") }, "\(app.stderr)")
        #expect(app.stderr.contains("); release 1.2.0 goes on serving. Install the release again, or restart the service.\n"), "\(app.stderr)")

        let other = try Self.staged("1.3.0", port: port)
        try other.setManifestSetting("app_id", "dev.switchback.other")
        try t.deploy(other.bundle)
        #expect(app.wait(upTo: 30) { app.stderr.contains("launcher: supervisor: The bundle at \(t.bundle) is now another app's (dev.switchback.other, not dev.switchback.sample); release 1.2.0 goes on serving. Restart the service to run the other app.") }, "\(app.stderr)")
        #expect(app.record?.childPID == child && NotesClient.get(port: port, path: "/notes").version == "1.2.0", "the same child serves")

        // A good release at last, whose supervise settings differ: adopted, and the supervisor says
        // it keeps its own settings until it is restarted.
        let good = try Self.staged("1.3.0", port: port)
        try good.setManifestSetting("supervise.grace_ms", "4000")
        try t.deploy(good.bundle)
        #expect(app.wait(upTo: 60) { NotesClient.get(port: port, path: "/notes").version == "1.3.0" && app.record?.childReady == true }, "\(app.stderr)")
        #expect(app.stderr.contains("launcher: supervisor: release 1.3.0 (current) with 1.2.0 (previous) was installed at the bundle's path; the serving build is its previous slot."), "\(app.stderr)")
        #expect(app.stderr.contains("launcher: supervisor: release 1.3.0 changes supervise.grace_ms; the supervisor keeps the settings it started with until the service is restarted.\n"), "\(app.stderr)")
        print("refused installs, then 1.3.0; supervisor stderr:\n\(app.stderr)")
    }

    @Test func withReleaseChecksOffAnInstalledReleaseWaitsForTheNextStart() throws {
        let t = try TestBundle(release: "1.2.0")
        let port = try unusedLocalPort()
        try Self.configure(t, port: port)
        try t.setManifestSetting("supervise.release_check_ms", "0")
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"])
        defer { app.stop() }
        try #require(waitUntil(seconds: 30) { NotesClient.get(port: port, path: "/notes").version == "1.2.0" }, "\(app.stderr)")
        let child = try #require(app.record?.childPID)
        let next = try Self.staged("1.3.0", port: port)
        try t.deploy(next.bundle)
        // Three times the default check's settle: a supervisor that looked would have switched.
        sleep(6)
        #expect(!app.stderr.contains("was installed at the bundle's path"), "\(app.stderr)")
        #expect(app.record?.childPID == child && NotesClient.get(port: port, path: "/notes").version == "1.2.0")
    }
}
