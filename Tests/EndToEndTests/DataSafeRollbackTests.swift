import Foundation
import RollbackCtlKit
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Data-safe rollback through the real binaries: the sample app's notes move from format 1
/// (1.1.0, `notes.txt`) to format 2 (1.2.0, `notes.v2`) by the step `notes-v2`, whose revert
/// writes format 1 back. Every switch to the previous slot runs that revert first, in a
/// launcher process that loads only the current slot.
@Suite struct DataSafeRollbackTests {
    /// `SAMPLE_NO_REVERT=1`: the sample registers `notes-v2` without its revert, so a
    /// rollback must restore the snapshot taken before it.
    static let noRevert = ["SAMPLE_NO_REVERT": "1"]

    /// Which note files the data directory holds.
    static func noteFiles(_ t: TestBundle) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: t.state + "/data")) ?? [])
            .filter { $0.hasPrefix("notes.") }.sorted()
    }

    static func notes(_ t: TestBundle, _ environment: [String: String] = [:]) throws -> [String] {
        let result = try t.launcher("note", "list", environment: environment)
        try #require(result.status == 0, "note list: \(result)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    static func add(_ t: TestBundle, _ note: String, _ environment: [String: String] = [:]) throws {
        let result = try t.launcher("note", "add", note, environment: environment)
        try #require(result.status == 0, "note add: \(result)")
    }

    static func data(_ t: TestBundle) throws -> StatusDocument.DataStatus {
        try t.status().data
    }

    /// The notes in an archived (or any) data directory, whichever format it holds.
    static func notes(inDirectory directory: String) -> [String] {
        if let v2 = try? String(contentsOfFile: directory + "/notes.v2", encoding: .utf8) {
            return v2.split(separator: "\n").dropFirst().compactMap { line in
                line.firstIndex(of: "\t").map { String(line[line.index(after: $0)...]) }
            }
        }
        let v1 = (try? String(contentsOfFile: directory + "/notes.txt", encoding: .utf8)) ?? ""
        return v1.split(separator: "\n").map(String.init)
    }

    // MARK: - rollbackctl

    @Test func rollbackRevertsTheNotesAndRollforwardMigratesThemAgain() throws {
        let t = try TestBundle()
        #expect(try t.rollbackctl("rollback").stdout == "Rolled back: the next start runs the previous slot (\(t.previousVersion)).\n",
                "nothing to convert before the current build ever ran")
        try Self.add(t, "old one")
        try Self.add(t, "old two")
        #expect(Self.noteFiles(t) == ["notes.txt"])

        #expect(try t.rollbackctl("rollforward").status == 0)
        try Self.add(t, "new three")
        #expect(Self.noteFiles(t) == ["notes.v2"], "the current build migrated the notes")
        let before = try Self.data(t)
        #expect(before.readerFloor == t.currentVersion)
        #expect(before.rollbackPlan == "revert")
        #expect(before.rollbackDataSafe == true)
        #expect(try t.rollbackctl("status").stdout.contains("Data: a rollback to \(t.previousVersion) is data-safe now: the revert of notes-v2 runs first."))

        let back = try t.rollbackctl("rollback")
        #expect(back.status == 0, "\(back)")
        #expect(back.stdout == """
            Data: reverted migration step notes-v2 so that \(t.previousVersion) can read it.
            Rolled back: the next start runs the previous slot (\(t.previousVersion)).

            """)
        #expect(Self.noteFiles(t) == ["notes.txt"])
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        #expect(try Self.notes(t) == ["old one", "old two", "new three"])

        let events = try t.history()
        let revert = try #require(events.first { $0.kind == "revert" })
        #expect(revert.source == "cli")
        #expect(revert.from == "current" && revert.to == "previous")
        #expect(revert.reason?.hasPrefix("step notes-v2 reverted so \(t.previousVersion) can read the data") == true)
        #expect(events.last?.kind == "switch", "the revert comes before the switch")
        let after = try Self.data(t)
        #expect(after.readerFloor == nil)
        #expect(after.rollbackPlan == "none")

        try Self.add(t, "old four")
        #expect(try t.rollbackctl("rollforward").status == 0)
        #expect(try Self.notes(t) == ["old one", "old two", "new three", "old four"])
        #expect(Self.noteFiles(t) == ["notes.v2"])
        #expect(try Self.data(t).readerFloor == t.currentVersion)
    }

    @Test func markBadOfTheCurrentBuildRevertsBeforeItSwitches() throws {
        let t = try TestBundle()
        try Self.add(t, "one", ["SWITCHBACK_SLOT": "previous"])
        try Self.add(t, "two")
        let bad = try t.rollbackctl("mark-bad", "current")
        #expect(bad.status == 0, "\(bad)")
        #expect(bad.stdout.contains("Data: reverted migration step notes-v2"))
        #expect(try Self.notes(t) == ["one", "two"])
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
    }

    /// Someone ran the current build by hand while rolled back: it migrated the notes again.
    /// The next start of the previous slot converts them back before it runs.
    @Test func thePreviousSlotNeverStartsOnDataItCannotRead() throws {
        let t = try TestBundle()
        try Self.add(t, "one")
        #expect(try t.rollbackctl("rollback").status == 0)
        try Self.add(t, "by hand", ["SWITCHBACK_SLOT": "current"])
        #expect(Self.noteFiles(t) == ["notes.v2"])
        #expect(try Self.data(t).readerFloor == t.currentVersion)

        let next = try t.launcher("note", "list")
        #expect(next.status == 0)
        #expect(next.stdout == "one\nby hand\n")
        #expect(Self.noteFiles(t) == ["notes.txt"])
        let revert = try #require(try t.history().last { $0.kind == "revert" })
        #expect(revert.source == "auto")
        #expect(revert.reason?.contains("the data's reader floor \(t.currentVersion) is above the previous build (\(t.previousVersion))") == true)
    }

    // MARK: - Automatic rollback

    @Test func threeCrashingStartsRevertTheNotesBeforeThePreviousSlotRuns() throws {
        let t = try TestBundle()
        // Forced runs use no try and mark nothing good: the current build stays on trial.
        try Self.add(t, "old one", ["SWITCHBACK_SLOT": "previous"])
        try Self.add(t, "old two", ["SWITCHBACK_SLOT": "previous"])
        try Self.add(t, "new three", ["SWITCHBACK_SLOT": "current"])
        #expect(Self.noteFiles(t) == ["notes.v2"])
        for _ in 0..<3 { #expect(try t.launcher("crash").signaled) }

        let fourth = try t.launcher("note", "list")
        #expect(fourth.status == 0, "\(fourth)")
        #expect(fourth.stdout == "old one\nold two\nnew three\n")
        #expect(fourth.stderr.contains("failed 3 starts without being marked good; running the previous slot"))
        #expect(Self.noteFiles(t) == ["notes.txt"])
        let status = try t.status()
        #expect(status.rollback == true && status.source == "auto")
        let revert = try #require(try t.history().first { $0.kind == "revert" })
        #expect(revert.source == "auto")

        try Self.add(t, "old four")
        let forward = try t.rollbackctl("rollforward")
        #expect(forward.stdout.contains("back on trial"), "\(forward)")
        #expect(try Self.notes(t) == ["old one", "old two", "new three", "old four"])
        #expect(Self.noteFiles(t) == ["notes.v2"])
    }

    @Test func anAutomaticRollbackThatCannotConvertTheDataKeepsTheCurrentBuild() throws {
        let t = try TestBundle()
        try Self.add(t, "old", ["SWITCHBACK_SLOT": "previous"].merging(Self.noRevert) { $1 })
        try Self.add(t, "new", ["SWITCHBACK_SLOT": "current"].merging(Self.noRevert) { $1 })
        try FileManager.default.removeItem(atPath: t.state + "/data.versions/snapshots")
        for _ in 0..<3 { #expect(try t.launcher("crash", environment: Self.noRevert).signaled) }

        let fourth = try t.launcher("note", "list", environment: Self.noRevert)
        #expect(fourth.stdout == "old\nnew\n", "the current build runs, on its own data")
        #expect(fourth.stderr.contains("The current build (\(t.currentVersion)) failed 3 starts without being marked good, but it stays: The previous build (\(t.previousVersion)) cannot read the data the current build (\(t.currentVersion)) left, and it cannot be converted back: "), "\(fourth.stderr)")
        #expect(fourth.stderr.contains("Run 'rollbackctl rollback --force' to archive the data"))
        #expect(try t.status().rollback == false)
        #expect(Self.noteFiles(t) == ["notes.v2"])
    }

    /// Supervise mode: a good build that keeps crashing is marked bad by the supervisor,
    /// which converts the data back (the child is gone, nothing writes) before the
    /// previous slot starts.
    @Test func aSupervisorRollingBackACrashingGoodBuildRevertsTheNotesFirst() throws {
        let t = try TestBundle()
        try t.setManifestSetting("supervise.backoff_initial_ms", "20")
        try t.setManifestSetting("supervise.backoff_max_ms", "80")
        try Self.add(t, "old one", ["SWITCHBACK_SLOT": "previous"])
        try Self.add(t, "new two")
        let app = try SupervisedLauncher(t, ["serve", "--crash-after", "0.3"])
        #expect(app.wait(upTo: 30) { app.heartbeat["slot"] == "previous" })
        app.stop()
        #expect(app.stderr.contains("crashed 3 times within 60 s after it was marked good; starting the previous slot"))
        #expect(try Self.notes(t) == ["old one", "new two"])
        #expect(Self.noteFiles(t) == ["notes.txt"])
        let revert = try #require(try t.history().first { $0.kind == "revert" })
        #expect(revert.source == "auto")
        #expect(revert.reason?.contains("crashed 3 times") == true)
    }

    // MARK: - Remote directive

    @Test func aSignedRollbackDirectiveRevertsTheNotesFirst() throws {
        let fleet = try RemoteDirectiveTests.Fleet()
        let t = fleet.t
        let server = try LocalHTTPServer.staticFiles(root: fleet.www)
        defer { server.stop() }
        try Self.add(t, "old one", ["SWITCHBACK_SLOT": "previous"])
        try Self.add(t, "new two")
        // The URL after those starts: a start leaves a detached remote check behind, which on a
        // loaded machine could fetch the directive published next before this sync does.
        try t.setManifestSetting("remote.url", server.url("/directive.json"))

        try fleet.publish("previous", serial: 1)
        let (back, _) = try fleet.sync()
        #expect(back.status == 0, "\(back)")
        #expect(back.stdout.contains("Data: reverted migration step notes-v2 so that \(t.previousVersion) can read it."))
        #expect(try Self.notes(t) == ["old one", "new two"])
        #expect(Self.noteFiles(t) == ["notes.txt"])
        let revert = try #require(try t.history().first { $0.kind == "revert" })
        #expect(revert.source == "remote")

        try Self.add(t, "old three")
        try fleet.publish("current", serial: 2)
        #expect(try fleet.sync().result.status == 0)
        #expect(try Self.notes(t) == ["old one", "new two", "old three"])
        #expect(Self.noteFiles(t) == ["notes.v2"])
    }

    @Test func aRollbackDirectiveThatWouldStrandTheDataIsNotApplied() throws {
        let fleet = try RemoteDirectiveTests.Fleet()
        let t = fleet.t
        let server = try LocalHTTPServer.staticFiles(root: fleet.www)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        try Self.add(t, "old", ["SWITCHBACK_SLOT": "previous"].merging(Self.noRevert) { $1 })
        try Self.add(t, "new", Self.noRevert)
        try FileManager.default.removeItem(atPath: t.state + "/data.versions/snapshots")

        try fleet.publish("previous", serial: 1)
        let result = try t.run(t.bundle + "/bin/rollbackctl", ["sync"], environment: Self.noRevert)
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("Error: Directive serial 1 is authentic but was not applied: The previous build (\(t.previousVersion)) cannot read the data"), "\(result.stderr)")
        let remote = try fleet.remote()
        #expect(remote.code == "switch_refused")
        #expect(remote.acceptedSerial == nil, "the next sync tries again")
        #expect(try t.status().rollback == false)
        #expect(Self.noteFiles(t) == ["notes.v2"])
    }

    // MARK: - Restore, refusal, force

    @Test func aStepWithoutARevertIsUndoneByRestoringItsSnapshotAndTheNewerDataIsArchived() throws {
        let t = try TestBundle()
        let env = Self.noRevert
        try Self.add(t, "old", env.merging(["SWITCHBACK_SLOT": "previous"]) { $1 })
        try Self.add(t, "new one", env)
        try Self.add(t, "new two", env)
        #expect(try Self.data(t).rollbackPlan == "restore")

        let back = try t.run(t.bundle + "/bin/rollbackctl", ["rollback"], environment: env)
        #expect(back.status == 0, "\(back)")
        let prefix = "Data: restored the snapshot taken before migration step notes-v2; the newer data is archived at "
        let line = try #require(back.stdout.split(separator: "\n").first { $0.hasPrefix(prefix) })
        let archive = String(line.dropFirst(prefix.count).dropLast())
        #expect(archive.hasPrefix(t.state + "/data.versions/snapshots/archive/"))
        #expect(Self.notes(inDirectory: archive) == ["old", "new one", "new two"], "the newer data sits in the archive")
        #expect(try Self.notes(t, env) == ["old"], "the previous version reads the data as it was before the step")

        let data = try Self.data(t)
        let last = try #require(data.lastArchive)
        #expect(last.kind == "restore")
        #expect(last.reason?.contains(archive) == true)
        #expect(try t.rollbackctl("status").stdout.contains("Data: last restore on "))
        let restore = try #require(try t.history().first { $0.kind == "restore" })
        #expect(restore.reason?.hasSuffix("the newer data is archived at \(archive)") == true)

        // Rolling forward migrates what the previous version has; the archive stays.
        #expect(try t.rollbackctl("rollforward").status == 0)
        #expect(try Self.notes(t, env) == ["old"])
        #expect(FileManager.default.fileExists(atPath: archive + "/notes.v2"))
    }

    /// Notes "old" (by the previous build) and "new" (by the current one, whose step has no
    /// revert), the snapshot removed, and the current build's plan published again after it.
    static func dataWithNoWayBack(_ t: TestBundle) throws {
        let env = Self.noRevert
        try Self.add(t, "old", env.merging(["SWITCHBACK_SLOT": "previous"]) { $1 })
        try Self.add(t, "new", env)
        try FileManager.default.removeItem(atPath: t.state + "/data.versions/snapshots")
        // The plan published at the last start predates the removal: start once more.
        try FileManager.default.removeItem(atPath: t.state + "/data-state")
        _ = try t.launcher(environment: env)
    }

    @Test func aRollbackThatWouldStrandTheDataIsRefusedAndForceArchivesIt() throws {
        let t = try TestBundle()
        let env = Self.noRevert
        try Self.dataWithNoWayBack(t)
        let data = try Self.data(t)
        #expect(data.rollbackPlan == "refused")
        #expect(data.rollbackDataSafe == false)
        #expect(try t.rollbackctl("status").stdout.contains("Data: a rollback to \(t.previousVersion) is NOT data-safe now"))

        let refused = try t.run(t.bundle + "/bin/rollbackctl", ["rollback"], environment: env)
        #expect(refused.status == 1)
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderr.hasPrefix("Error: The previous build (\(t.previousVersion)) cannot read the data the current build (\(t.currentVersion)) left, and it cannot be converted back: "))
        #expect(refused.stderr.hasSuffix("Run 'rollbackctl rollback --force' to archive the data and roll back with it empty, or stay on \(t.currentVersion).\n"))
        #expect(try t.status().rollback == false, "the flag is unchanged")
        #expect(Self.noteFiles(t) == ["notes.v2"], "the data is unchanged")

        let forced = try t.run(t.bundle + "/bin/rollbackctl", ["rollback", "--force"], environment: env)
        #expect(forced.status == 0, "\(forced)")
        let prefix = "Data: migration step notes-v2 could not be undone; its data is archived at "
        let line = try #require(forced.stdout.split(separator: "\n").first { $0.hasPrefix(prefix) })
        let archive = String(line.dropFirst(prefix.count).split(separator: " ").first ?? "")
        #expect(Self.notes(inDirectory: archive) == ["old", "new"])
        #expect(forced.stdout.hasSuffix("Rolled back: the next start runs the previous slot (\(t.previousVersion)).\n"))
        #expect(try Self.notes(t, env).isEmpty, "the previous build starts with no data")
        let event = try #require(try t.history().first { $0.kind == "archive" })
        #expect(event.reason?.contains(archive) == true)
    }

    /// A flag that selects the previous build (a state file restored from a backup, here)
    /// over data with no way back: the start converts nothing and runs the current build;
    /// status names the same slot and the same refusal, from the plan the current build
    /// published, and so does a forced previous slot.
    @Test func statusNamesTheSlotTheStartRunsWhenTheDataHasNoWayBack() throws {
        let t = try TestBundle()
        let env = Self.noRevert
        try Self.dataWithNoWayBack(t)
        try #require(try Self.data(t).rollbackPlan == "refused")
        let sha = { (slot: String) in try t.manifestValue(slot + ".sha256") }
        let state = "format=2\nrollback=true\nsource=cli\nreason=restored from a backup\nchanged_at=\(Int(Date().timeIntervalSince1970))\n"
            + "from.sha256=\(try sha("current"))\nfrom.version=\(t.currentVersion)\nto.sha256=\(try sha("previous"))\nto.version=\(t.previousVersion)\nend=ok\n"
        try state.write(toFile: t.state + "/state", atomically: true, encoding: .utf8)
        try shell("chmod", "600", t.state + "/state")

        let status = try t.status(environment: env)
        #expect(status.activeSlot == "current", "\(status)")
        #expect(status.reasonCode == "data-not-convertible", "\(status)")
        let sentence = try t.rollbackctl("status").stdout
        let refusal = "revious build (\(t.previousVersion)) cannot read the data the current build (\(t.currentVersion)) left, and it cannot be converted back: "
        #expect(sentence.contains(refusal), "\(sentence)")
        let start = try t.launcher(environment: env)
        #expect(start.stdout.hasPrefix(t.greeting(.current)), "\(start)")
        #expect(start.stderr.contains(refusal), "\(start)")
        #expect(try Self.notes(t, env) == ["old", "new"], "the data is unchanged")

        // A forced previous slot: both refuse, with the same sentence's start.
        let forced = try t.status(environment: env.merging(["SWITCHBACK_SLOT": "previous"]) { $1 })
        #expect(forced.refusal?.contains(refusal) == true, "\(forced)")
        let forcedStart = try t.launcher(environment: env.merging(["SWITCHBACK_SLOT": "previous"]) { $1 })
        #expect(forcedStart.status != 0 && forcedStart.stderr.contains(refusal), "\(forcedStart)")
    }

    @Test func rollbackHelpDocumentsForce() throws {
        let t = try TestBundle()
        let help = try t.rollbackctl("rollback", "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE: rollbackctl rollback [--reason TEXT] [--force]"))
        let bad = try t.rollbackctl("rollforward", "--force")
        #expect(bad.status == 64)
    }
    @Test func aRevertThatFailsSwitchesNothingAndRunsAgainOnceFixed() throws {
        let t = try TestBundle()
        try Self.add(t, "one")
        // Something in the way of notes.txt: the revert cannot write it.
        try FileManager.default.createDirectory(atPath: t.state + "/data/notes.txt", withIntermediateDirectories: true)
        let failed = try t.rollbackctl("rollback")
        #expect(failed.status == 1)
        #expect(failed.stderr == "Error: Converting the data back for the previous build (\(t.previousVersion)) failed: undoing migration step \"notes-v2\" failed: cannot convert \(t.state)/data/notes.v2 back to \(t.state)/data/notes.txt. Nothing was switched; fix the cause and run 'rollbackctl rollback' again (it resumes where it stopped).\n")
        #expect(try t.status().rollback == false)
        #expect(FileManager.default.fileExists(atPath: t.state + "/data/notes.v2"), "the notes are where they were")
        #expect(try Self.notes(t) == ["one"], "the current build still reads them")

        try FileManager.default.removeItem(atPath: t.state + "/data/notes.txt")
        let fixed = try t.rollbackctl("rollback")
        #expect(fixed.status == 0, "\(fixed)")
        #expect(try Self.notes(t) == ["one"])
        #expect(Self.noteFiles(t) == ["notes.txt"])
    }

    @Test func aCurrentSlotThatCannotBeLoadedRefusesTheRollbackUnlessForced() throws {
        let t = try TestBundle()
        try Self.add(t, "one")
        try shell("truncate", "-s", "4096", t.slotPath(.current))
        let refused = try t.rollbackctl("rollback")
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("Error: The current build (\(t.currentVersion)) could not be loaded to convert its data back for \(t.previousVersion): The current slot at \(t.slotPath(.current)) is truncated"), "\(refused.stderr)")
        #expect(refused.stderr.hasSuffix("Run 'rollbackctl rollback --force' to switch without converting the data.\n"))
        #expect(try t.status().rollback == false)

        let forced = try t.rollbackctl("rollback", "--force")
        #expect(forced.status == 0)
        #expect(forced.stderr.hasPrefix("Warning: The current build (\(t.currentVersion)) could not be loaded"))
        #expect(forced.stderr.hasSuffix("Switching anyway (--force); the data is left as it is.\n"))
        #expect(forced.stdout == "Rolled back: the next start runs the previous slot (\(t.previousVersion)).\n")
        #expect(Self.noteFiles(t) == ["notes.v2"])
    }

    /// Notes in format 2 whose step has neither revert (SAMPLE_NO_REVERT) nor snapshot, with
    /// the data state republished to say so; `rolledBack` sets the flag first, while the
    /// data is still readable.
    static func stranded(_ t: TestBundle, rolledBack: Bool) throws {
        if rolledBack { try #require(try t.rollbackctl("rollback").status == 0) }
        try add(t, "old", noRevert.merging(["SWITCHBACK_SLOT": "previous"]) { $1 })
        try add(t, "new", noRevert.merging(["SWITCHBACK_SLOT": "current"]) { $1 })
        try FileManager.default.removeItem(atPath: t.state + "/data.versions/snapshots")
        try FileManager.default.removeItem(atPath: t.state + "/data-state")
        _ = try t.launcher(environment: noRevert.merging(["SWITCHBACK_SLOT": "current"]) { $1 })
        try #require(try data(t).rollbackPlan == "refused")
    }

    @Test func aForcedPreviousSlotStopsRatherThanMisreadTheData() throws {
        let t = try TestBundle()
        try Self.stranded(t, rolledBack: false)
        let result = try t.launcher("note", "list", environment: Self.noRevert.merging(["SWITCHBACK_SLOT": "previous"]) { $1 })
        #expect(result.status == 70)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("launcher: The previous build (\(t.previousVersion)) cannot read the data the current build (\(t.currentVersion)) left, and it cannot be converted back: "), "\(result.stderr)")
        #expect(result.stderr.hasSuffix("SWITCHBACK_SLOT forces the previous slot, so the launcher stops here.\n"))
        #expect(Self.noteFiles(t) == ["notes.v2"])
    }

    @Test func aRolledBackStartOnDataThePreviousCannotReadRunsTheCurrentSlot() throws {
        let t = try TestBundle()
        try Self.stranded(t, rolledBack: true)
        let result = try t.launcher("note", "list", environment: Self.noRevert)
        #expect(result.status == 0)
        #expect(result.stdout == "old\nnew\n", "the current build runs, on its own data")
        #expect(result.stderr.hasPrefix("launcher: The previous build (\(t.previousVersion)) cannot read the data"), "\(result.stderr)")
        #expect(result.stderr.hasSuffix("Running the current slot (\(t.currentVersion)) instead.\n"))
        #expect(try t.status().rollback == true, "the flag is the operator's; it stays")
    }

    @Test func markBadThatWouldStrandTheDataMarksButDoesNotSwitch() throws {
        let t = try TestBundle()
        try Self.stranded(t, rolledBack: false)
        let result = try t.run(t.bundle + "/bin/rollbackctl", ["mark-bad", "current"], environment: Self.noRevert)
        #expect(result.status == 1)
        #expect(result.stdout == "Marked the current build (\(t.currentVersion)) bad.\n")
        #expect(result.stderr.hasPrefix("Error: The previous build (\(t.previousVersion)) cannot read the data"))
        #expect(try t.health("current").verdict == "bad")
        #expect(try t.status().rollback == false)
        #expect(Self.noteFiles(t) == ["notes.v2"])
    }

    @Test func anUnknownDowngradeModeIsRefusedByTheLauncher() throws {
        let t = try TestBundle()
        let result = try t.launcher(environment: ["SWITCHBACK_DOWNGRADE": "maybe"])
        #expect(result.status == 70)
        #expect(result.stdout == "message=SWITCHBACK_DOWNGRADE must be 'run' or 'force', not 'maybe'.\n")
    }

    // MARK: - Writers in flight

    /// A `note add` in flight when a rollback starts finishes before the revert begins:
    /// the app's note commands hold its data lock shared, the downgrade exclusively.
    @Test func aRollbackWaitsForANoteCommandInFlight() throws {
        let t = try TestBundle()
        try Self.add(t, "one")
        // Stand in for a long note command: hold the lock shared from here.
        let fd = open(t.state + "/data.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        try #require(flock(fd, LOCK_SH) == 0)
        var environment = ProcessInfo.processInfo.environment
        environment["SWITCHBACK_STATE_DIR"] = t.state
        let rollback = try SpawnedProcess(t.bundle + "/bin/rollbackctl", ["rollback"], environment: environment)
        usleep(500_000)
        #expect(!rollback.hasExited, "the downgrade must wait for the note command")
        #expect(Self.noteFiles(t) == ["notes.v2"])
        close(fd)
        #expect(rollback.wait(upTo: 60) == 0)
        #expect(Self.noteFiles(t) == ["notes.txt"])
        #expect(try Self.notes(t) == ["one"])
    }
}
