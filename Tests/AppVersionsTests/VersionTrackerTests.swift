import AppVersions
import Foundation
import Testing

@Suite("Version history")
struct VersionTrackerTests {
    let store = InMemoryLedgerStore()
    let clock = TestClock()

    func tracker(osRelease: String? = nil) -> VersionTracker {
        VersionTracker(store: store, osReleasePath: osRelease, now: clock.reader)
    }

    func running(_ version: Version, _ build: String = "b1") -> RunningVersion {
        RunningVersion(version: version, build: build)
    }

    @Test func firstLaunchIsAnInstall() throws {
        let launch = try tracker().record(running("1.0.0"), slot: "current")
        #expect(launch.changeState == .installed)
        #expect(launch.isFirstInstall)
        #expect(launch.previous == nil)
        #expect(launch.firstInstalled == running("1.0.0"))
        #expect(launch.history.events == [
            HistoryEvent(kind: .installed, running: running("1.0.0"), date: clock.now, slot: "current"),
        ])
    }

    @Test func sameVersionAndBuildChangesNothingAndWritesNothing() throws {
        try tracker().record(running("1.0.0"))
        let before = store.entries(in: .app)
        clock.advance()
        let launch = try tracker().record(running("1.0.0"))
        #expect(launch.changeState == .notChanged)
        #expect(!launch.isFirstInstall)
        #expect(launch.previous == running("1.0.0"))
        #expect(store.entries(in: .app) == before)
    }

    @Test func recordsEveryKindOfTransition() throws {
        let tracker = tracker()
        try tracker.record(running("1.0.0"), slot: "current")
        clock.advance()
        #expect(try tracker.record(running("1.0.0", "b2"), slot: "current").changeState == .updated(from: running("1.0.0")))
        clock.advance()
        #expect(try tracker.record(running("1.1.0", "b3"), slot: "current").changeState == .upgraded(from: running("1.0.0", "b2")))
        clock.advance()
        let rollback = try tracker.record(running("1.0.0", "b2"), slot: "previous")
        #expect(rollback.changeState == .downgraded(from: running("1.1.0", "b3")))
        #expect(rollback.previous == running("1.1.0", "b3"))
        clock.advance()
        let metadataOnly = try tracker.record(RunningVersion(version: "1.0.0+sha.2", build: "b2"), slot: "previous")
        #expect(metadataOnly.changeState == .updated(from: running("1.0.0", "b2")))

        let history = try tracker.history()
        #expect(history.events.map(\.kind) == [.installed, .updated, .upgraded, .downgraded, .updated])
        #expect(history.events.map(\.slot) == ["current", "current", "current", "previous", "previous"])
        let dates = history.events.map(\.date)
        #expect(dates == dates.sorted() && Set(dates).count == dates.count)
        #expect(history.firstInstalled == running("1.0.0"))
        #expect(history.previous == running("1.0.0", "b2"))
        #expect(history.latest?.version.isIdentical(to: "1.0.0+sha.2") == true)
    }

    @Test func prereleaseToReleaseIsAnUpgrade() throws {
        try tracker().record(running("2.0.0-rc.1"))
        #expect(try tracker().record(running("2.0.0")).changeState == .upgraded(from: running("2.0.0-rc.1")))
    }

    @Test func historySurvivesTheFileStore() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let first = VersionTracker(store: FileLedgerStore(directory: directory.path), osReleasePath: nil, now: clock.reader)
        try first.record(running("1.0.0"), slot: "current")
        clock.advance()
        try first.record(running("2.0.0"), slot: "current")
        let reopened = VersionTracker(store: FileLedgerStore(directory: directory.path), osReleasePath: nil)
        let history = try reopened.history()
        #expect(history.events == [
            HistoryEvent(kind: .installed, running: running("1.0.0"), date: clock.now.addingTimeInterval(-60), slot: "current"),
            HistoryEvent(kind: .upgraded, running: running("2.0.0"), date: clock.now, slot: "current"),
        ])
        #expect(try reopened.record(running("2.0.0"), slot: "current").changeState == .notChanged)
    }

    @Test func tracksTheOperatingSystemInItsOwnHistory() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("""
            PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
            NAME="Debian GNU/Linux"
            VERSION_ID="12"
            ID=debian
            """, to: "os-release")
        let tracker = tracker(osRelease: directory.file("os-release"))
        let bookworm = SystemVersion(id: "debian", versionID: "12", prettyName: "Debian GNU/Linux 12 (bookworm)")
        let first = try tracker.record(running("1.0.0"))
        #expect(first.history.events.first?.system == bookworm)
        #expect(first.history.systemEvents == [SystemEvent(date: clock.now, system: bookworm)])

        // The OS changes while the app does not: only the system history grows.
        clock.advance()
        try directory.write("ID=debian\nVERSION_ID='13'\nPRETTY_NAME='Debian GNU/Linux 13 (trixie)'\n", to: "os-release")
        let second = try tracker.record(running("1.0.0"))
        #expect(second.changeState == .notChanged)
        #expect(second.history.events.count == 1)
        #expect(second.history.systemEvents.map(\.system.versionID) == ["12", "13"])
        #expect(second.history.latestSystem?.prettyName == "Debian GNU/Linux 13 (trixie)")

        // The app changes on the new OS: its event names the OS it ran on.
        clock.advance()
        let third = try tracker.record(running("1.1.0"))
        #expect(third.history.events.last?.system?.versionID == "13")
        #expect(third.history.systemEvents.count == 2)
    }

    @Test func aMissingOSReleaseFileIsNotAnError() throws {
        let launch = try tracker(osRelease: "/nonexistent/os-release").record(running("1.0.0"))
        #expect(launch.history.systemEvents.isEmpty)
        #expect(launch.history.events.first?.system == nil)
    }

    @Test func parsesOSReleaseQuoting() {
        let parsed = SystemVersion.parse(osRelease: """
            # comment
            NAME="Ubuntu"
            VERSION_ID="24.04"
            PRETTY_NAME="Ubuntu 24.04 \\"Noble\\" LTS"
            ID=ubuntu
            garbage line
            """)
        #expect(parsed == SystemVersion(id: "ubuntu", versionID: "24.04", prettyName: "Ubuntu 24.04 \"Noble\" LTS"))
        #expect(SystemVersion.parse(osRelease: "nothing useful here") == nil)
        #expect(SystemVersion.parse(osRelease: "PRETTY_NAME=Arch Linux\n")?.id == "linux")
    }

    @Test func scopesHaveSeparateHistories() throws {
        let alice = VersionTracker(store: store, scope: "user-alice", osReleasePath: nil)
        let bob = VersionTracker(store: store, scope: "user-bob", osReleasePath: nil)
        try alice.record(running("1.0.0"))
        try alice.record(running("2.0.0"))
        #expect(try bob.record(running("2.0.0")).changeState == .installed)
        #expect(try alice.history().events.count == 2)
        #expect(try bob.history().events.count == 1)
        #expect(try tracker().history().isEmpty)
    }

    @Test func eventsAreAppendedNeverRewritten() throws {
        let tracker = tracker()
        var seen: [LedgerEntry] = []
        for (index, version) in ["1.0.0", "1.1.0", "1.0.0", "1.2.0"].enumerated() {
            clock.advance()
            try tracker.record(running(Version(version)!, "b\(index)"))
            let now = store.entries(in: .app)
            #expect(Array(now.prefix(seen.count)) == seen)
            #expect(now.count == seen.count + 1)
            seen = now
        }
    }
}
