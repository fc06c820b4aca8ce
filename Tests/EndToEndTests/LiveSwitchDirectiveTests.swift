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
    @Test func aDirectiveRollsBackAndForwardStopFirstAndNoBuildReadsTheOthersFormat() throws {
        var volume: DirectiveFileTests.ConfigMapVolume?
        var keys = ""
        let (t, port, app) = try LiveSwitchDataTests.server { t in
            keys = t.directory + "/keys"
            let made = try t.rollbackctl("keygen", "--out", keys)
            try #require(made.status == 0, "keygen: \(made)")
            volume = try DirectiveFileTests.ConfigMapVolume(at: t.directory + "/config")
            try t.setManifestSetting("remote.keys", try RemoteDirectiveTests.Fleet.keyBody(keys + "/directive.pub"))
            try t.setManifestSetting("remote.url", "file://" + volume!.path)
        }
        defer { app.stop() }
        func signed(_ decision: String, serial: Int) throws -> Data {
            let out = t.directory + "/signed-\(serial).json"
            let result = try t.run(t.bundle + "/bin/rollbackctl", [
                "sign", "--key", keys + "/directive.key", "--decision", decision, "--applies-to", LiveSwitchDataTests.newer,
                "--serial", String(serial), "--reason", "directive \(serial): \(decision)", "--out", out,
            ])
            try #require(result.status == 0, "sign: \(result)")
            return try Data(contentsOf: URL(fileURLWithPath: out))
        }

        // Back: 1.2.0's notes are converted for 1.1.9 while no child serves.
        var client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        try volume!.publish(try signed("previous", serial: 1))
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
        try volume!.publish(try signed("current", serial: 2))
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
}
