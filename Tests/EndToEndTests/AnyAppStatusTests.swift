import Foundation
import SwitchbackCore
import Testing

/// What a bundle of any app gets: a first release (both slots hold one build), a data state
/// another build or app published, and a build that does not manage data with Switchback.
@Suite struct AnyAppStatusTests {
    /// The bundle as `scripts/bundle --first-release` makes it: the current build in both slots.
    func firstRelease() throws -> TestBundle {
        let t = try TestBundle()
        try shell("cp", t.slotPath(.current), t.slotPath(.previous))
        let path = t.bundle + "/manifest"
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.removeAll { $0.hasPrefix("previous.") }
        lines += lines.filter { $0.hasPrefix("current.") }.map { "previous." + $0.dropFirst("current.".count) }
        lines.append("first_release=true")
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return t
    }

    @Test func aFirstReleaseRefusesARollbackAndChangesNothing() throws {
        let t = try firstRelease()
        #expect(try t.launcher().status == 0)
        let result = try t.rollbackctl("rollback", "--reason", "try it")
        #expect(result.status == 1)
        #expect(result.stderr == "Error: This bundle is a first release: both slots hold the same build (\(t.currentVersion)), so there is nothing to roll back to; ship a fix, or bundle the next release with this one pinned as PreviousVersion. The flag is unchanged.\n")
        let status = try t.status()
        #expect(status.rollback == false)
        #expect(status.firstRelease == true)
        #expect(try t.rollbackctl("status").stdout.contains("Previous slot: the same build as the current one (a first release): rollbacks are refused until the next release pins this one."))
    }

    @Test func aFailingFirstReleaseKeepsRunningWithAWarning() throws {
        let t = try firstRelease()
        let crash = ["SWIFT_BACKTRACE": "enable=no"]
        for _ in 1...3 { #expect(try t.launcher("crash", environment: crash).signaled) }
        let next = try t.launcher()
        #expect(next.status == 0)
        #expect(next.stdout.hasPrefix(t.greeting(.current)))
        #expect(next.stderr.contains("WARNING: the current build (\(t.currentVersion)) failed 3 starts without being marked good, and this bundle is a first release: both slots hold the same build, so there is nothing to roll back to. Running it anyway; fix it and ship a new release."))
        let status = try t.status()
        #expect(status.activeSlot == "current")
        #expect(status.explanation.contains("both slots hold it (a first release)") == true)
    }

    @Test func aDataStatePublishedByAnotherBuildIsIgnoredWithANote() throws {
        let t = try TestBundle()
        try FileManager.default.createDirectory(atPath: t.state, withIntermediateDirectories: true)
        chmod(t.state, 0o700)
        // What the sample of another install (or another app sharing the directory) left.
        let foreign = "published_by=9.9.9\npublished_build=feedface\npublished_at=1795326000\nreader_floor=9.9.9\nrollback_to=9.0.0\nrollback=revert\ndetail=the revert of notes-v9 runs first\nend=ok\n"
        try foreign.write(toFile: t.state + "/data-state", atomically: true, encoding: .utf8)
        chmod(t.state + "/data-state", 0o600)
        let text = try t.rollbackctl("status").stdout
        #expect(text.contains("Data: The data state in \(t.state)/data-state is ignored: it was published by 9.9.9 (build feedface) for a rollback to 9.0.0, but this bundle's current build is \(t.currentVersion)"))
        #expect(!text.contains("notes-v9"))
        let data = try t.status().data
        #expect(data.published == false)
        #expect(data.ignored?.contains("published by 9.9.9") == true)
        // The launcher does not convert data for a floor another build published.
        #expect(try t.rollbackctl("rollback").status == 0)
        let previous = try t.launcher()
        #expect(previous.status == 0)
        #expect(previous.stdout.hasPrefix(t.greeting(.previous)))
    }

    @Test func aBuildThatDoesNotManageItsDataSaysSoInsteadOfWaitingForADataState() throws {
        let t = try TestBundle()
        try t.setManifestSetting("current.downgrade", "false")
        let text = try t.rollbackctl("status").stdout
        #expect(text.contains("Data: the current build does not manage its data with Switchback (it exports no switchback_downgrade); a rollback leaves the data as it is."))
        #expect(!text.contains("no data state published yet"))
        let data = try t.status().data
        #expect(data.managed == false)
    }

    @Test func theSDKsBundleRecordsThatItManagesItsData() throws {
        let t = try TestBundle()
        #expect(try t.manifestValue("current.downgrade") == "true")
    }

    /// rollbackctl renders JSON itself (it links no Foundation): a reason's quotes, backslashes,
    /// slashes and non-ASCII come back whole through a standard parser, and its controls as the
    /// one boundary for outside text made them (a tab a space, U+0001 written out): a reason is
    /// stored as one line with no control.
    @Test func statusAndHistoryJSONCarryAnyReasonWhole() throws {
        let t = try TestBundle()
        let reason = "\"quoted\" back\\slash\ttab /slash ünïcode \u{1}control"
        let stored = "\"quoted\" back\\slash tab /slash ünïcode \\u{01}control"
        #expect(try t.rollbackctl("rollback", "--reason", reason).status == 0)
        let status = try t.status()
        #expect(status.reason == stored)
        #expect(status.rollback == true)
        #expect((status.fromBuild)?.version == t.currentVersion)
        let last = try #require(try t.history().last)
        #expect(last.reason == stored)
    }
}
