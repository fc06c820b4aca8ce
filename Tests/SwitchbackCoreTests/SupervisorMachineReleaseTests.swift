#if canImport(Glibc)
import Glibc
#endif
@testable import SwitchbackCore
import Testing

/// A release installed under the supervisor (`SupervisorMachine+Release`): the machine learns
/// the new versions and calls each child by the slot its build has in the new release; the
/// switch that follows is the usual one. No process, no clock.
@Suite struct SupervisorMachineReleaseTests {
    typealias Machine = SupervisorMachine
    static let at = SupervisorMachineTests.at
    /// The release after the one the test machine runs (1.3.0 "cur", 1.2.0 "prev"): 1.4.0,
    /// whose previous slot is the serving 1.3.0.
    static let next = Machine.InstalledRelease(currentVersion: "1.4.0", currentBuild: "new", previousVersion: "1.3.0", previousBuild: "cur")

    @Test func theServingBuildIsCalledByItsSlotInTheNewReleaseAndTheChoiceIsLookedAtAgain() {
        var machine = SupervisorMachineTests.serving(listeners: true)
        let actions = machine.handle(.releaseInstalled(Self.next), at: Self.at(5))
        #expect(actions == [.say("release 1.4.0 (current) with 1.3.0 (previous) was installed at the bundle's path; the serving build is its previous slot."),
                            .publish, .reconsiderChoice])
        #expect(machine.serving?.slot == .previous && machine.serving?.outdatedVersion == nil && machine.serving?.pid == 100)
        #expect(machine.watchedSlot == .previous)
        #expect(machine.configuration.version(.current) == "1.4.0" && machine.configuration.version(.previous) == "1.3.0")
        // The choice selects the new current build: the usual start-first switch, with the new versions.
        let switched = machine.handle(.choiceSelects(.current, path: .startFirst), at: Self.at(5.1))
        #expect(switched.contains(.spawn(.candidate(.current))))
        #expect(switched.contains(.notifySystemd(["RELOADING=1", "STATUS=Switching to the current slot (1.4.0)", "MONOTONIC_USEC=5100000"])))
    }

    @Test func aStopFirstSwitchToTheNewBuildRestoresTheServingBuildBySlotWhenItFails() {
        var machine = SupervisorMachineTests.serving(listeners: true)
        _ = machine.handle(.releaseInstalled(Self.next), at: Self.at(5))
        let why = "1.4.0 migrates notes-v3, which 1.3.0 cannot read"
        let began = machine.handle(.choiceSelects(.current, path: .stopFirst(why: why)), at: Self.at(5.1))
        #expect(SupervisorMachineTests.said(began) == ["the persisted choice now selects the current slot; stop-first: \(why); stopping the previous slot (pid 100) first, new connections wait in the queue."])
        #expect(machine.handle(.exited(pid: 100, .exited(0)), at: Self.at(5.7)) == [.spawn(.stopFirst(.current))])
        _ = machine.handle(.spawned(.stopFirst(.current), pid: 200, intendedSlot: .current, goodBuilds: []), at: Self.at(5.7))
        let failed = machine.handle(.exited(pid: 200, .exited(70)), at: Self.at(6))
        // The serving build was 1.3.0, the new release's previous slot: that slot starts again.
        #expect(failed.contains(.spawn(.restore(.previous))))
        #expect(SupervisorMachineTests.said(failed) == ["The switch to the current slot (1.4.0) did not happen: it exited with code 70 before it was ready; the previous slot (1.3.0) serves again, on data in its own format."])
    }

    @Test func aServingBuildInNeitherSlotIsReplacedEvenWhenTheChoiceNamesTheSlotItIsCalledBy() {
        var machine = SupervisorMachineTests.serving(listeners: true)
        let unrelated = Machine.InstalledRelease(currentVersion: "2.0.0", currentBuild: "two", previousVersion: "1.9.0", previousBuild: "nine")
        let actions = machine.handle(.releaseInstalled(unrelated), at: Self.at(5))
        #expect(SupervisorMachineTests.said(actions) == ["release 2.0.0 (current) with 1.9.0 (previous) was installed at the bundle's path; the serving build (1.3.0) is in neither of its slots."])
        #expect(machine.serving?.outdatedVersion == "1.3.0" && machine.serving?.slot == .previous)
        #expect(machine.serving?.title == "1.3.0, of the release before (pid 100)")
        // The choice selects the previous slot (1.9.0): the serving 1.3.0 is still replaced.
        #expect(machine.handle(.choiceSelects(.previous, path: .startFirst), at: Self.at(5.1)).contains(.spawn(.candidate(.previous))))
    }

    @Test func theSameBuildsUnderNewVersionsChangeNoSlot() {
        var machine = SupervisorMachineTests.serving(listeners: true)
        let same = Machine.InstalledRelease(currentVersion: "1.3.0", currentBuild: "cur", previousVersion: "1.1.0", previousBuild: "old")
        _ = machine.handle(.releaseInstalled(same), at: Self.at(5))
        #expect(machine.serving?.slot == .current && machine.serving?.outdatedVersion == nil)
        #expect(machine.handle(.choiceSelects(.current, path: .startFirst), at: Self.at(5.1)) == [])
    }

    @Test func aReleaseCheckIntervalCanBeTurnedOff() {
        #expect(SupervisorMachineTests.machine().settings.releaseCheckMilliseconds == 1000)
        #expect(SupervisorMachineTests.machine(["supervise.release_check_ms": "0"]).settings.releaseCheckMilliseconds == 0)
    }
}

/// Whether a record's process is this install's supervisor (`SupervisorIdentity`), the one
/// rule every reader asks: the hand-off, `status`, `promote` and `abort`, and so a release
/// installed under the supervisor (its executable then the old release's, moved or deleted).
@Suite struct SupervisorRecordIdentityTests {
    static func record(bundle: String?, startedAt: Int64) -> SupervisorRecord {
        var record = SupervisorRecord(pid: getpid(), startedAt: startedAt, childPID: nil, childSlot: nil, childStartedAt: nil, restarts: 0)
        record.bundle = bundle
        return record
    }

    /// A record of this very process, as a supervisor publishes its own.
    static func own() throws -> SupervisorRecord {
        let ticks = try #require(ProcessFacts.ownStartTicks())
        var record = record(bundle: "/tmp", startedAt: try #require(ProcessFacts.startTime(ticks: ticks)))
        record.startTicks = ticks
        let executable = try #require(ProcessFacts.executable(getpid()))
        record.executableDevice = executable.device
        record.executableInode = executable.inode
        return record
    }

    static func mismatch(_ record: SupervisorRecord, owner: uid_t = geteuid()) -> SupervisorIdentity.Mismatch? {
        if case .failure(let mismatch) = SupervisorIdentity.identify(record, owner: owner) { return mismatch }
        return nil
    }

    @Test func aProcessStartTimeIsReadFromProcfs() throws {
        let ticks = try #require(ProcessFacts.ownStartTicks())
        let started = try #require(ProcessFacts.startTime(ticks: ticks))
        let now = Int64(time(nil))
        #expect(started <= now && started > now - 24 * 3600, "\(started) vs \(now)")
        #expect(ProcessFacts.procStat(Int32.max) == nil)
    }

    @Test func theRecordsOwnProcessIsTheSupervisor() throws {
        let record = try Self.own()
        guard case .success(let live) = SupervisorIdentity.identify(record, owner: geteuid()) else {
            Issue.record("this process was not identified by its own record")
            return
        }
        #expect(live.isRunning)
        #expect(live.actsFor(bundleRoot: "/tmp") && !live.actsFor(bundleRoot: "/var"))
    }

    @Test func aReusedPidIsToldApartByItsStartTickEvenWithinTheSameSecond() throws {
        var record = try Self.own()
        record.startTicks! += 1
        #expect(Self.mismatch(record) == .startedAt(ticks: record.startTicks! - 1, seconds: ProcessFacts.startTime(ticks: record.startTicks! - 1)))
        let sentence = SupervisorIdentity.sentence(record, Self.mismatch(record)!)
        #expect(sentence.hasPrefix("The supervisor record names pid \(getpid()), which is not this install's supervisor (it started at "), "\(sentence)")
        #expect(sentence.hasSuffix("); ignoring it."), "\(sentence)")
    }

    @Test func anotherUsersProcessOrAnotherProgramIsNotTheSupervisor() throws {
        let record = try Self.own()
        #expect(Self.mismatch(record, owner: geteuid() &+ 1) == .otherUser(uid: geteuid(), owner: geteuid() &+ 1))
        #expect(SupervisorIdentity.sentence(record, .otherUser(uid: 1001, owner: 0))
                == "The supervisor record names pid \(getpid()), which is not this install's supervisor (it belongs to uid 1001, the record to uid 0); ignoring it.")
        var other = record
        other.executableInode! &+= 1
        guard case .otherExecutable(let path) = Self.mismatch(other) else {
            Issue.record("another executable passed")
            return
        }
        #expect(path == ProcessFacts.executablePath(getpid()))
    }

    @Test func aPidWithNoProcessIsStale() throws {
        var record = try Self.own()
        record.pid = Int32.max - 1
        #expect(Self.mismatch(record) == .gone)
        #expect(SupervisorIdentity.sentence(record, .gone)
                == "The supervisor record names pid \(Int32.max - 1), which is not this install's supervisor (no process has that pid now); ignoring it.")
    }

    @Test func aRecordFromBeforeTheStartTickIsHeldToItsStartSecond() throws {
        let own = try Self.own()
        let old = Self.record(bundle: "/tmp", startedAt: own.startedAt)
        #expect(Self.mismatch(old) == nil)
        #expect(Self.mismatch(Self.record(bundle: "/tmp", startedAt: own.startedAt - 3600)) != nil)
    }

    @Test func aProcessThatExitedIsNotRunningEvenBeforeItIsReaped() throws {
        var pid: pid_t = 0
        let spawned = withCStrings(["/bin/sleep", "30"]) { argv in posix_spawn(&pid, "/bin/sleep", nil, nil, UnsafeMutablePointer(mutating: argv), environ) }
        try #require(spawned == 0)
        #expect(SupervisorRecord.isRunning(pid))
        kill(pid, SIGKILL)
        // Not reaped yet: kill(pid, 0) still finds the zombie.
        var zombie = false
        for _ in 0..<500 where !zombie {
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            zombie = stat.contains(") Z ")
            if !zombie { usleep(10_000) }
        }
        #expect(zombie && kill(pid, 0) == 0)
        #expect(!SupervisorRecord.isRunning(pid))
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        #expect(!SupervisorRecord.isRunning(pid))
    }

    @Test func theRecordCarriesTheBundle() throws {
        let text = Self.record(bundle: "/srv/notes/releases/1.2.0", startedAt: 1_800_000_000).serialized()
        #expect(try SupervisorRecord.parse(text, path: "supervisor").bundle == "/srv/notes/releases/1.2.0")
    }
}
