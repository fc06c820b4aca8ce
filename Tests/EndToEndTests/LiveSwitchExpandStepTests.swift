import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 30.3 through the real binaries: a release whose only pending step declares a reader
/// floor at or below the serving version (an expand step) keeps its start-first switch; the
/// same step without a floor makes it stop-first. The release fixture's 1.3.0, whose previous
/// slot is 1.2.0, both format 2; the sample's `SAMPLE_EXPAND_STEP` registers `notes-index`
/// at 1.3.0, a file no build reads (Sources/AppCore/SampleApp+Migrations.swift).
@Suite(.serialized) struct LiveSwitchExpandStepTests {
    /// 1.2.0 serving (rolled back before the first start), a notes client running; then
    /// `rollbackctl rollforward` to 1.3.0, whose start runs `notes-index`.
    static func rollForward(expandStep: String) throws -> (SupervisedLauncher, [NotesClient.Response]) {
        let t = try TestBundle(release: "1.3.0")
        let port = try unusedLocalPort()
        try t.setManifestSetting("supervise", "true")
        try t.setManifestSetting("supervise.listen", "127.0.0.1:\(port)")
        let rollback = try t.rollbackctl("rollback", "--reason", "start on 1.2.0")
        try #require(rollback.status == 0, "\(rollback)")
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: ["SAMPLE_EXPAND_STEP": expandStep])
        try #require(waitUntil(seconds: 30) { NotesClient.get(port: port, path: "/notes").version == "1.2.0" }, "\(app.stderr)")
        try #require(app.wait(upTo: 10) { app.record?.childReady == true })
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        let rollforward = try t.rollbackctl("rollforward")
        #expect(rollforward.status == 0, "\(rollforward)")
        #expect(app.wait(upTo: 60) { app.record?.childSlot == .current && app.record?.childReady == true && app.record?.candidatePID == nil
            && app.record?.pause == nil }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().filter { $0.version == "1.3.0" }.count > 20 })
        let responses = client.stop()
        #expect(responses.filter(\.refused).isEmpty && responses.allSatisfy { $0.refused || $0.status == 200 }, "\(responses.filter { $0.status != 200 }.prefix(5))")
        let listed = Set(NotesClient.get(port: port, path: "/notes").body.split(separator: "\n").map(String.init))
        let added = responses.compactMap { $0.added }
        #expect(listed.isSuperset(of: added), "missing: \(Set(added).subtracting(listed))")
        #expect(FileManager.default.fileExists(atPath: t.state + "/data/notes.index"), "1.3.0 ran notes-index")
        return (app, responses)
    }

    @Test func anExpandStepWithAFloorAtTheServingVersionKeepsTheSwitchStartFirst() throws {
        let (app, responses) = try Self.rollForward(expandStep: "1.3.0:1.2.0")
        defer { app.stop() }
        #expect(app.stderr.contains("the persisted choice now selects the current slot; starting it beside"), "\(app.stderr)")
        #expect(app.record?.lastSwitch == nil, "no stop-first switch: \(String(describing: app.record?.lastSwitch))")
        // Start-first: the two builds answered side by side for a moment, none refused.
        #expect(Set(responses.compactMap(\.version)) == ["1.2.0", "1.3.0"])
    }

    @Test func theSameStepWithoutAFloorMakesTheSwitchStopFirst() throws {
        let (app, responses) = try Self.rollForward(expandStep: "1.3.0")
        defer { app.stop() }
        let record = try #require(app.record?.lastSwitch)
        #expect(record.path == "stop-first" && record.to == .current)
        #expect(record.why == "1.3.0 migrates notes-index, which 1.2.0 cannot read")
        try LiveSwitchDataTests.checkNoBuildReadsTheOthersFormat(responses, first: "1.2.0", then: "1.3.0", record: record)
    }
}
