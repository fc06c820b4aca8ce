import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The operator's loop through the real binaries: run, roll back, run, roll forward, run.
@Suite struct SwitchTests {
    @Test func rollbackAndRollforwardSwitchTheRunningBuild() throws {
        let t = try TestBundle()
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))

        let back = try t.rollbackctl("rollback", "--reason", "1.1.0 loses data")
        #expect(back.status == 0)
        // The first start created the notes store in format 2: it is converted back first.
        #expect(back.stdout == """
            Data: reverted migration step notes-v2 so that \(t.previousVersion) can read it.
            Rolled back: the next start runs the previous slot (\(t.previousVersion)).

            """)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
        #expect(try t.launcher("version").stdout == t.previousVersion + "\n")

        let status = try t.status()
        #expect(status.activeSlot == "previous")
        #expect(status.rollback == true)
        #expect(status.source == "cli")
        #expect(status.reason == "1.1.0 loses data")
        let slots = status.slots
        #expect(slots["current"]?.version == t.currentVersion)
        #expect(slots["previous"]?.version == t.previousVersion)
        #expect(status.explanation.hasPrefix("The next start runs the previous slot (\(t.previousVersion)) because an operator rolled back with rollbackctl on ") == true)

        let forward = try t.rollbackctl("rollforward")
        // The build the operator rolled back from runs again, on probation.
        #expect(forward.stdout == "Rolled forward: the next start runs the current slot (\(t.currentVersion)).\nThe current build (\(t.currentVersion)) was bad (an operator rolled back from it: 1.1.0 loses data); it is back on trial with 3 tries.\n")
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
        let status2 = try t.status()
        #expect(status2.activeSlot == "current")
        #expect(status2.rollback == false)
        #expect(status2.reason == nil)

        let history = try t.history().filter { $0.kind == "switch" }
        #expect(history.map { "\($0.from)->\($0.to) \($0.source)" } == ["current->previous cli", "previous->current cli"])
        #expect(history.first?.reason == "1.1.0 loses data")
    }

    @Test func firstStatusExplainsTheDefault() throws {
        let t = try TestBundle()
        let status = try t.rollbackctl("status")
        #expect(status.status == 0)
        #expect(status.stdout.hasPrefix("The next start runs the current slot (\(t.currentVersion)) because nobody has rolled back this install (there is no state file yet).\n"))
        let json = try t.status()
        #expect(json.source == "default")
        #expect(json.reason == nil)
    }

    @Test func repeatingARollbackChangesNothing() throws {
        let t = try TestBundle()
        _ = try t.rollbackctl("rollback")
        let again = try t.rollbackctl("rollback")
        #expect(again.status == 0)
        #expect(again.stdout.hasPrefix("Already rolled back"))
        #expect(try t.history().count == 1)
    }

    @Test func argumentsEnvironmentAndExitCodePassThrough() throws {
        let t = try TestBundle()
        let args = try t.launcher("args", "two words", "", "--flag=x", "ünïcode")
        #expect(args.stdout == "two words\n\n--flag=x\nünïcode\n")
        #expect(try t.launcher("exit", "42").status == 42)
        #expect(try t.launcher("env", "SAMPLE_VAR", environment: ["SAMPLE_VAR": "kept"]).stdout == "kept\n")
        // The launcher's internal variables never reach the app.
        #expect(try t.launcher("env", "SWITCHBACK_LAUNCH_FAILED").stdout == "(unset)\n")
    }

    @Test func environmentForcesASlotForOneRun() throws {
        let t = try TestBundle()
        #expect(try t.launcher(environment: ["SWITCHBACK_SLOT": "previous"]).stdout.hasPrefix(t.greeting(.previous)))
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
        let bad = try t.launcher(environment: ["SWITCHBACK_SLOT": "older"])
        #expect(bad.status == 64)
        #expect(bad.stderr == "launcher: SWITCHBACK_SLOT must be 'current' or 'previous', not 'older'; unset it to use the persisted choice.\n")
    }

    @Test func launcherFindsItsBundleThroughASymlinkFromAnyDirectory() throws {
        let t = try TestBundle()
        let elsewhere = try makeTemporaryDirectory()
        try FileManager.default.createSymbolicLink(atPath: elsewhere + "/app", withDestinationPath: t.bundle + "/bin/launcher")
        let result = try t.run(elsewhere + "/app", [])
        #expect(result.stdout.hasPrefix(t.greeting(.current)))
    }

    @Test func verifyChecksBothSlots() throws {
        let t = try TestBundle()
        let ok = try t.rollbackctl("verify")
        #expect(ok.status == 0)
        #expect(ok.stdout.contains("current: ok (\(t.currentVersion)"))
        #expect(ok.stdout.contains("previous: ok (\(t.previousVersion)"))

        try corruptMiddle(t.slotPath(.previous))
        let bad = try t.rollbackctl("verify")
        #expect(bad.status == 1)
        #expect(bad.stdout.contains("previous: FAILED: The previous slot at \(t.slotPath(.previous)) does not match the manifest's SHA-256"))
        #expect(bad.stderr == "Error: previous failed verification; rebuild the bundle with scripts/bundle.\n")
    }

    @Test func inspectReportsWhatALibrarySaysAboutItself() throws {
        let t = try TestBundle()
        let result = try t.rollbackctl("inspect", t.slotPath(.current))
        #expect(result.status == 0)
        #expect(result.stdout.contains("version=\(t.currentVersion)\n"))
        #expect(result.stdout.contains("abi=switchback-abi/"))
        #expect(result.stdout.contains("sha256=\(try t.manifestValue("current.sha256"))\n"))
    }
}

/// Overwrites 64 bytes in the middle of a file, keeping its size and ELF header.
func corruptMiddle(_ path: String) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    let size = try handle.seekToEnd()
    try handle.seek(toOffset: size / 2)
    try handle.write(contentsOf: Data(repeating: 0xA5, count: 64))
    try handle.close()
}
