import Foundation
import SwitchbackCore
import Testing

/// A rollback and a health verdict follow builds across releases: two real releases made by
/// the documented routine (scripts/lib/release-fixture), deployed one after the other over
/// one state directory, through the real binaries.
@Suite struct ReleaseTests {
    static var release120: String { TestBundle.releases + "/1.2.0" }
    static var release130: String { TestBundle.releases + "/1.3.0" }

    @Test func theNextReleaseSupersedesARollbackAndRunsOnTrial() throws {
        let t = try TestBundle(release: "1.2.0")
        #expect(try t.launcher().stdout.hasPrefix("Hello from the Switchback sample app, version 1.2.0 (current slot)"))
        let rollback = try t.rollbackctl("rollback", "--reason", "1.2.0 corrupts exports")
        #expect(rollback.status == 0, "\(rollback.stderr)")
        #expect(try t.launcher().stdout.hasPrefix("Hello from the Switchback sample app, version 1.1.0 (previous slot)"))
        let rejected = try t.manifestValue("current.sha256")

        try t.deploy(Self.release130)
        // The 1.3.0 bundle's previous slot is the very build the operator rolled back from.
        #expect(try t.manifestValue("previous.sha256") == rejected)
        let status = try t.status()
        #expect(status.activeSlot == "current")
        #expect(status.explanation.contains("because release 1.3.0 (SHA-256 ") == true)
        #expect(status.explanation.contains("superseded an operator's rollback of ") == true)

        let first = try t.launcher()
        #expect(first.status == 0)
        #expect(first.stdout.hasPrefix("Hello from the Switchback sample app, version 1.3.0 (current slot)"))
        #expect(first.stderr.hasPrefix("launcher: Release 1.3.0 (SHA-256 "))
        #expect(first.stderr.contains("from 1.2.0 (SHA-256 \(rejected.prefix(12)))"))
        #expect(first.stderr.hasSuffix("; running it on trial.\n"))

        let after = try t.status()
        #expect(after.rollback == false)
        #expect(after.source == "default")
        let current = try t.health("current"), previous = try t.health("previous")
        #expect(current.verdict == "good")  // the greeting exits 0
        #expect(previous.verdict == "bad")
        #expect(previous.markedBy == "cli")
        #expect((previous.note) == "an operator rolled back from it: 1.2.0 corrupts exports")
        let release = try #require(try t.history().last { $0.kind == "release" })
        #expect(release.reason?.hasPrefix("release 1.3.0 (SHA-256 ") == true)
        #expect(release.source == "default")
        // Recorded once: the next start says nothing.
        #expect(try t.launcher().stderr == "")
    }

    @Test func aBuildMarkedBadStaysBadInThePreviousSlotAndIsNeverAnAutomaticTarget() throws {
        let t = try TestBundle(release: "1.2.0")
        let markBad = try t.rollbackctl("mark-bad", "current")
        #expect(markBad.status == 0, "\(markBad.stderr)")
        #expect(try t.status().activeSlot == "previous")

        try t.deploy(Self.release130)
        let previous = try t.health("previous")
        #expect(previous.verdict == "bad")
        #expect(previous.note == "marked bad with rollbackctl")
        let text = try t.rollbackctl("status")
        #expect(text.stdout.contains("previous  1.2.0 build "))
        #expect(text.stdout.contains(": ok, bad (marked bad with rollbackctl)"))

        // 1.3.0 keeps failing: automatic rollback will not pick the rejected 1.2.0.
        for _ in 0..<3 { #expect(try t.launcher("crash").signaled) }
        let fourth = try t.launcher()
        #expect(fourth.stdout.hasPrefix("Hello from the Switchback sample app, version 1.3.0 (current slot)"))
        #expect(fourth.stderr.contains("WARNING: the current build (1.3.0) failed 3 starts without being marked good, but automatic rollback will not switch to the previous build (1.2.0), which was rejected: marked bad with rollbackctl."))
        #expect(fourth.stderr.contains("run 'rollbackctl rollback' to run 1.2.0 again"))
        #expect(try t.status().warning != nil)
        #expect(try t.status().rollback == false)
    }

    @Test func redeployingTheSameBundleKeepsTheRollback() throws {
        let t = try TestBundle(release: "1.2.0")
        #expect(try t.rollbackctl("rollback").status == 0)
        try t.deploy(Self.release120)
        let start = try t.launcher()
        #expect(start.stdout.hasPrefix("Hello from the Switchback sample app, version 1.1.0 (previous slot)"))
        #expect(start.stderr == "")
        #expect(try t.history().contains { $0.kind == "release" } == false)
    }

    @Test func anOperatorsRollbackIsNotUndoneByAutomaticRollback() throws {
        let t = try TestBundle()
        #expect(try t.rollbackctl("rollback", "--reason", "current corrupts data").status == 0)
        for _ in 0..<3 { #expect(try t.launcher("crash").signaled) }
        let fourth = try t.launcher()
        #expect(fourth.stdout.hasPrefix(t.greeting(.previous)))
        #expect(fourth.stderr.contains("WARNING: the previous build (\(t.previousVersion)) failed 3 starts without being marked good, but automatic rollback will not switch to the current build (\(t.currentVersion)), which was rejected: an operator rolled back from it: current corrupts data."))
        #expect(fourth.stderr.contains("run 'rollbackctl rollforward' to run \(t.currentVersion) again"))
        let status = try t.status()
        #expect(status.rollback == true)
        #expect(status.source == "cli")
        #expect(try t.history().contains { $0.source == "auto" && $0.kind == "switch" } == false)
        // The command it names recovers.
        #expect(try t.rollbackctl("rollforward").status == 0)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
    }
}
