import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` at random moments of a rollback's revert and of its restore: `rollbackctl
/// rollback` and the launcher it started to convert the data are killed together (one
/// process group), then the app starts again. The data must always be wholly in one
/// format (never both files), and no note may be lost: for a revert, the app lists every
/// note; for a restore, every note is in the data or in an archive. Half the kills land
/// anywhere in the rollback, half within a few milliseconds after the undo's journal entry.
@Suite(.serialized) struct DowngradeKillTests {
    static let rounds = 100

    struct Tally: CustomStringConvertible {
        var before = 0, after = 0, interruptedMidway = 0
        var description: String { "\(before) ended before the switch, \(after) after it; \(interruptedMidway) left an undo to finish" }
    }

    /// One round: the current build has the data (format 2); a rollback is started and
    /// killed after a random delay; the next start must find whole data with every note.
    static func run(restore: Bool) throws -> Tally {
        let t = try TestBundle()
        let env = restore ? DataSafeRollbackTests.noRevert : [:]
        var everyNote: [String] = []
        func add(_ note: String, slot: String? = nil) throws {
            try DataSafeRollbackTests.add(t, note, env.merging(slot.map { ["SWITCHBACK_SLOT": $0] } ?? [:]) { $1 })
            everyNote.append(note)
        }
        try add("before any migration", slot: "previous")

        // How long an uninterrupted rollback takes here, to spread the kills over it.
        var durations: [Double] = []
        for index in 0..<3 {
            try add("timing \(index)")
            let start = Date()
            let back = try t.run(t.bundle + "/bin/rollbackctl", ["rollback"], environment: env)
            durations.append(Date().timeIntervalSince(start))
            try #require(back.status == 0, "\(back)")
            try #require(try t.rollbackctl("rollforward").status == 0)
        }
        let span = durations.sorted()[1]

        var tally = Tally()
        var processEnvironment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        processEnvironment["SWITCHBACK_STATE_DIR"] = t.state
        processEnvironment.removeValue(forKey: "SWITCHBACK_SLOT")
        for round in 0..<rounds {
            // The current build runs and has the data: `note add` migrates when it must.
            try add("note \(round)")
            try #require(DataSafeRollbackTests.noteFiles(t) == ["notes.v2"], "round \(round)")

            let ledger = t.state + "/data.versions/scope-app.ledger"
            let ledgerBefore = Self.size(ledger)
            let rollback = try SpawnedProcess(t.bundle + "/bin/rollbackctl", ["rollback"], environment: processEnvironment,
                                              ownProcessGroup: true)
            if round.isMultiple(of: 2) {
                // Anywhere in the whole rollback.
                usleep(UInt32(Double.random(in: 0...span) * 1_000_000))
            } else {
                // Inside the undo: from the moment its journal entry is written, a few ms on.
                let deadline = Date().addingTimeInterval(30)
                while Self.size(ledger) == ledgerBefore, !rollback.hasExited, Date() < deadline { sched_yield() }
                usleep(UInt32.random(in: 0...4_000))
            }
            kill(-rollback.pid, SIGKILL)
            rollback.wait()
            // A launcher child still running would be in the group too: wait it out.
            while kill(-rollback.pid, 0) == 0 { usleep(1_000) }

            let journal = (try? String(contentsOfFile: ledger, encoding: .utf8)) ?? ""
            // The last record before the checksum line ("end <count> <sum>").
            if journal.split(separator: "\n").last(where: { !$0.hasPrefix("end ") })?.hasPrefix("undo-began") == true {
                tally.interruptedMidway += 1
            }

            // The next start, on whichever slot the flag now names.
            let listed = try DataSafeRollbackTests.notes(t, env)
            let files = DataSafeRollbackTests.noteFiles(t)
            let rolledBack = try t.status().rollback == true
            try #require(files == [rolledBack ? "notes.txt" : "notes.v2"],
                         "round \(round): the data is mixed or in the wrong format: \(files), rolled back: \(rolledBack)")
            if restore {
                let archives = (try? FileManager.default.contentsOfDirectory(atPath: t.state + "/data.versions/snapshots/archive")) ?? []
                let kept = Set(listed + archives.flatMap {
                    DataSafeRollbackTests.notes(inDirectory: t.state + "/data.versions/snapshots/archive/" + $0)
                })
                let lost = everyNote.filter { !kept.contains($0) }
                try #require(lost.isEmpty, "round \(round): notes lost: \(lost)")
                try #require(Set(listed).isSubset(of: Set(everyNote)))
            } else {
                try #require(listed == everyNote, "round \(round): the app lists \(listed)")
            }
            if rolledBack {
                tally.after += 1
                try #require(try t.rollbackctl("rollforward").status == 0)
            } else {
                tally.before += 1
            }
        }
        return tally
    }

    static func size(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }

    @Test func aHundredKillsDuringARevertLoseNoNote() throws {
        let tally = try Self.run(restore: false)
        print("kill -9 during a revert: \(tally)")
        #expect(tally.before + tally.after == Self.rounds)
    }

    @Test func aHundredKillsDuringARestoreLoseNoNote() throws {
        let tally = try Self.run(restore: true)
        print("kill -9 during a restore: \(tally)")
        #expect(tally.before + tally.after == Self.rounds)
    }
}
