import Foundation
import Testing

/// A damaged state file never crashes anything and never loses the operator's choice
/// silently: the tools say what they found and what they assume.
@Suite struct BrokenStateTests {
    enum Damage: String, CaseIterable {
        case empty, truncated, garbage, newerFormat, unreadable

        func apply(_ path: String) throws -> String {
            let fm = FileManager.default
            switch self {
            case .empty:
                try Data().write(to: URL(fileURLWithPath: path))
                return "The state file \(path) is empty"
            case .truncated:
                let text = try String(contentsOfFile: path, encoding: .utf8)
                try String(text.prefix(text.count / 2)).write(toFile: path, atomically: false, encoding: .utf8)
                return "The state file \(path) "
            case .garbage:
                try Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 97) }).write(to: URL(fileURLWithPath: path))
                return "The state file \(path) "
            case .newerFormat:
                try "format=7\nflag=previous-ish\nend=ok\n".write(toFile: path, atomically: false, encoding: .utf8)
                return "The state file \(path) was written by a newer Switchback (format 7, this one reads 2)"
            case .unreadable:
                try fm.removeItem(atPath: path)
                try fm.createDirectory(atPath: path, withIntermediateDirectories: false)
                return "Reading \(path) failed: Is a directory"
            }
        }
    }

    @Test(arguments: Damage.allCases)
    func damagedStateKeepsTheLastRecordedChoice(damage: Damage) throws {
        let t = try TestBundle()
        _ = try t.rollbackctl("rollback", "--reason", "operator's choice")
        let found = try damage.apply(t.state + "/state")

        let result = try t.launcher()
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix(t.greeting(.previous)), "the choice recorded in the history survives")
        #expect(result.stderr.hasPrefix("launcher: \(found)"))
        #expect(result.stderr.hasSuffix("; assuming the last choice in the history (previous, set by cli); run 'rollbackctl rollback' or 'rollbackctl rollforward' to write a fresh one.\n"))

        let status = try t.status()
        #expect(status.activeSlot == "previous")
        #expect(status.stateProblem?.hasPrefix(found) == true)
        #expect(status.reason == "operator's choice")

        let forward = try t.rollbackctl("rollforward")
        if damage == .newerFormat {
            #expect(forward.status == 1)
            #expect(forward.stderr.contains("Use that version's rollbackctl; this one will not overwrite it."))
        } else {
            #expect(forward.status == 0)
            #expect(forward.stderr.hasPrefix("Warning: The state file was damaged ("))
            #expect(forward.stderr.contains("it was moved to \(t.state)/state.damaged-"))
            #expect(try t.launcher().stdout.hasPrefix(t.greeting(.current)))
            #expect(try t.launcher().stderr.isEmpty)
        }
    }

    @Test func damagedStateWithoutHistoryAssumesTheDefault() throws {
        let t = try TestBundle()
        try FileManager.default.createDirectory(atPath: t.state, withIntermediateDirectories: true)
        try "rollback=tru".write(toFile: t.state + "/state", atomically: false, encoding: .utf8)
        let result = try t.launcher()
        #expect(result.stdout.hasPrefix(t.greeting(.current)))
        #expect(result.stderr.hasSuffix("; assuming the default (current); run 'rollbackctl rollback' or 'rollbackctl rollforward' to write a fresh one.\n"))
    }

    /// Untrusted, the directory is written nowhere, but the rollback it records still counts:
    /// a change of modes never runs the build an operator rejected (docs/design.md, "State on
    /// shared volumes").
    @Test func aStateDirectoryOthersCanWriteIsNotTrusted() throws {
        let t = try TestBundle()
        _ = try t.rollbackctl("rollback")
        try shell("chmod", "777", t.state)
        let result = try t.launcher()
        #expect(result.stdout.hasPrefix(t.greeting(.previous)))
        #expect(result.stderr.hasPrefix("launcher: The state directory \(t.state) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(t.state)'; it records that an operator rolled back with rollbackctl on "), "\(result)")
        #expect(result.stderr.hasSuffix(", so the previous slot runs, and nothing is written there until it is trusted again.\n"), "\(result)")
        let write = try t.rollbackctl("rollforward")
        #expect(write.status == 1)
        #expect(write.stderr == "Error: The state directory \(t.state) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(t.state)'.\n")
        try shell("chmod", "700", t.state)
        #expect(try t.launcher().stdout.hasPrefix(t.greeting(.previous)))
    }
}
