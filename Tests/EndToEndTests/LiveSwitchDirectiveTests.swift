import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A switch made by a signed directive takes the same paths as one made by `rollbackctl`
/// (issues 28.1 and 30): the directive's sync hands the conversion back to the supervisor,
/// and the rollforward asks the target's planning run. The directive comes from a file laid
/// out as a ConfigMap volume (docs/remote.md, "Directives from a file"), so the supervisor
/// applies it at once; the load and the checks are LiveSwitchDataTests'.
@Suite(.serialized) struct LiveSwitchDirectiveTests {
    /// A key pair and a ConfigMap-style volume the bundle's manifest trusts (`remote.keys`,
    /// `remote.url=file://...`), and directives signed with the key.
    final class DirectiveSource {
        let keys: String
        var volume: DirectiveFileTests.ConfigMapVolume
        var serial = 0

        /// Configures `t` before its supervisor starts.
        init(configuring t: TestBundle) throws {
            keys = t.directory + "/keys"
            let made = try t.rollbackctl("keygen", "--out", keys)
            try #require(made.status == 0, "keygen: \(made)")
            volume = try DirectiveFileTests.ConfigMapVolume(at: t.directory + "/config")
            try t.setManifestSetting("remote.keys", try RemoteDirectiveTests.Fleet.keyBody(keys + "/directive.pub"))
            try t.setManifestSetting("remote.url", "file://" + volume.path)
        }

        /// Signs the next directive for `release` (the bundle's current version) and publishes it.
        func publish(_ decision: String, appliesTo release: String, in t: TestBundle) throws {
            serial += 1
            let out = t.directory + "/signed-\(serial).json"
            let result = try t.run(t.bundle + "/bin/rollbackctl", [
                "sign", "--key", keys + "/directive.key", "--decision", decision, "--applies-to", release,
                "--serial", String(serial), "--reason", "directive \(serial): \(decision)", "--out", out,
            ])
            try #require(result.status == 0, "sign: \(result)")
            try volume.publish(try Data(contentsOf: URL(fileURLWithPath: out)))
        }
    }

    @Test func aDirectiveRollsBackAndForwardStopFirstAndNoBuildReadsTheOthersFormat() throws {
        var source: DirectiveSource?
        let (t, port, app) = try LiveSwitchDataTests.server { t in source = try DirectiveSource(configuring: t) }
        defer { app.stop() }
        let directives = try #require(source)

        // Back: 1.2.0's notes are converted for 1.1.9 while no child serves.
        var client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        try directives.publish("previous", appliesTo: LiveSwitchDataTests.newer, in: t)
        #expect(app.wait(upTo: 60) { app.record?.lastSwitch?.to == .previous && app.record?.lastSwitch?.pausedMilliseconds != nil
            && app.record?.childReady == true }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().filter { $0.version == LiveSwitchDataTests.older }.count > 20 })
        var responses = client.stop()
        var record = try #require(app.record?.lastSwitch)
        #expect(record.path == "stop-first")
        #expect(record.why == "the data (reader floor 1.2.0) must be converted back for 1.1.9")
        try LiveSwitchDataTests.checkNoBuildReadsTheOthersFormat(responses, first: LiveSwitchDataTests.newer,
                                                                 then: LiveSwitchDataTests.older, record: record)
        #expect(try t.history().contains { $0.kind == "revert" && $0.source == "remote" }, "the directive's conversion is recorded as the directive's")
        var added = responses.compactMap { $0.added }
        print("directive back: \(responses.count) requests, \(record.sentence)")

        // Forward: 1.2.0 migrates notes-v2 at its start, which 1.1.9 cannot read.
        client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        try directives.publish("current", appliesTo: LiveSwitchDataTests.newer, in: t)
        #expect(app.wait(upTo: 60) { app.record?.lastSwitch?.to == .current && app.record?.lastSwitch?.pausedMilliseconds != nil
            && app.record?.childReady == true }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().filter { $0.version == LiveSwitchDataTests.newer }.count > 20 })
        responses = client.stop()
        record = try #require(app.record?.lastSwitch)
        #expect(record.path == "stop-first")
        #expect(record.why == "1.2.0 migrates notes-v2, which 1.1.9 cannot read")
        try LiveSwitchDataTests.checkNoBuildReadsTheOthersFormat(responses, first: LiveSwitchDataTests.older,
                                                                 then: LiveSwitchDataTests.newer, record: record)
        added += responses.compactMap { $0.added }
        let listed = Set(NotesClient.get(port: port, path: "/notes").body.split(separator: "\n").map(String.init))
        #expect(listed.isSuperset(of: ["before one", "before two"] + added), "missing: \(Set(added).subtracting(listed))")
        print("directive forward: \(responses.count) requests, \(record.sentence)")
    }

    @Test func aDirectiveRollingForwardToABuildWhoseMigrationFailsLeavesTheOlderBuildServingWithEveryNote() throws {
        var source: DirectiveSource?
        let (t, port, app) = try LiveSwitchDataTests.server { t in source = try DirectiveSource(configuring: t) }
        defer { app.stop() }
        let directives = try #require(source)
        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(app.wait(upTo: 60) { app.record?.childSlot == .previous && app.record?.childReady == true }, "\(app.stderr)")
        // From now on 1.2.0's notes-v2 fails (Sources/AppCore/SampleApp+Migrations.swift).
        try "\(LiveSwitchDataTests.newer)\n".write(toFile: t.state + "/data/fail-migration", atomically: true, encoding: .utf8)
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        try directives.publish("current", appliesTo: LiveSwitchDataTests.newer, in: t)
        #expect(app.wait(upTo: 60) { app.record?.switchFailure != nil && app.record?.childSlot == .previous && app.record?.childReady == true }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 + 50 })
        let responses = client.stop()
        #expect(responses.filter(\.refused).isEmpty, "refused: \(responses.filter(\.refused).count)")
        #expect(responses.allSatisfy { $0.refused || $0.status == 200 }, "\(responses.filter { $0.status != 200 }.prefix(5))")
        #expect(responses.allSatisfy { $0.version == LiveSwitchDataTests.older && $0.format == "1" }, "only 1.1.9 answered, in its format")
        let listed = Set(NotesClient.get(port: port, path: "/notes").body.split(separator: "\n").map(String.init))
        #expect(listed.isSuperset(of: ["before one", "before two"] + responses.compactMap { $0.added }))
        let reason = try #require(app.record?.switchFailure?.reason)
        #expect(reason.hasPrefix("the switch to the current slot (1.2.0) did not happen: it exited with code "), "\(reason)")
        #expect(reason.hasSuffix("; the previous slot (1.1.9) serves again, on data in its own format"), "\(reason)")
        #expect(try t.history().contains { $0.kind == "switch" && $0.source == "remote" }, "the directive switched the flag")
        print("directive forward, migration fails: \(responses.count) requests; \(reason)")
    }

    @Test func aDirectiveRollingForwardToAReleaseWhoseOnlyStepIsAnExpandStepStaysStartFirst() throws {
        let t = try TestBundle(release: "1.3.0")
        let port = try unusedLocalPort()
        try t.setManifestSetting("supervise", "true")
        try t.setManifestSetting("supervise.listen", "127.0.0.1:\(port)")
        let directives = try DirectiveSource(configuring: t)
        #expect(try t.rollbackctl("rollback", "--reason", "start on 1.2.0").status == 0)
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: ["SAMPLE_EXPAND_STEP": "1.3.0:1.2.0"])
        defer { app.stop() }
        try #require(waitUntil(seconds: 30) { NotesClient.get(port: port, path: "/notes").version == "1.2.0" }, "\(app.stderr)")
        try #require(app.wait(upTo: 10) { app.record?.childReady == true })
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        try directives.publish("current", appliesTo: "1.3.0", in: t)
        #expect(app.wait(upTo: 60) { app.record?.childSlot == .current && app.record?.childReady == true && app.record?.candidatePID == nil
            && app.record?.pause == nil }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().filter { $0.version == "1.3.0" }.count > 20 })
        let responses = client.stop()
        #expect(responses.filter(\.refused).isEmpty && responses.allSatisfy { $0.refused || $0.status == 200 }, "\(responses.filter { $0.status != 200 }.prefix(5))")
        #expect(Set(responses.compactMap(\.version)) == ["1.2.0", "1.3.0"], "start-first: both answered for a moment")
        #expect(app.stderr.contains("the persisted choice now selects the current slot; starting it beside"), "\(app.stderr)")
        #expect(app.record?.lastSwitch == nil, "no stop-first switch: \(String(describing: app.record?.lastSwitch))")
        #expect(FileManager.default.fileExists(atPath: t.state + "/data/notes.index"), "1.3.0 ran notes-index")
        let listed = Set(NotesClient.get(port: port, path: "/notes").body.split(separator: "\n").map(String.init))
        #expect(listed.isSuperset(of: responses.compactMap { $0.added }))
    }
}
