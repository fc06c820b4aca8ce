import SwitchbackCore
import Testing

/// Numbers outside their range (docs/fuzzing.md) are damage, reported with the file's code.
struct RangeCheckTests {
    /// A time in year 2^31: gmtime's year + 1900 overflowed Int32 and trapped.
    let yearTwoToThe31 = "67768000000000000"

    @Test func formatUTCIsTotal() {
        #expect(formatUTC(Int64.max) == "<invalid time 9223372036854775807>")
        #expect(formatUTC(67_768_000_000_000_000) == "<invalid time 67768000000000000>")
        #expect(formatRFC3339(Int64.min) == "<invalid time -9223372036854775808>")
        #expect(formatUTC(1_795_317_164) == "2026-11-22 03:12:44 UTC")
    }

    @Test func remoteRecordRejectsATimeOutOfRange() {
        let text = "format=1\nlast_attempt_at=\(yearTwoToThe31)\nend=ok\n"
        let error = #expect(throws: SwitchbackError.self) { try RemoteRecord.parse(Array(text.utf8), path: "remote") }
        #expect(error?.code == .stateInvalid)
        #expect(error?.message.contains("last_attempt_at") == true)
    }

    @Test func supervisorRecordRejectsPIDsKillCannotProbeAlone() {
        for pid in ["0", "-1", "2147483648"] {
            let text = "pid=\(pid)\nstarted_at=1795317164\nrestarts=0\n"
            let error = #expect(throws: SwitchbackError.self) { try SupervisorRecord.parse(Array(text.utf8), path: "supervisor") }
            #expect(error?.code == .stateInvalid)
        }
        let good = try? SupervisorRecord.parse(Array("pid=42\nstarted_at=1795317164\nrestarts=2\n".utf8), path: "supervisor")
        #expect(good?.restarts == 2)
    }

    @Test func dataStateRejectsAPublishedTimeOutOfRange() {
        let text = "published_by=1.2.0\npublished_at=\(yearTwoToThe31)\nrollback_to=1.1.0\nrollback=none\nend=ok\n"
        let error = #expect(throws: SwitchbackError.self) { try DataState.parse(Array(text.utf8), path: "data-state") }
        #expect(error?.code == .stateInvalid)
    }

    @Test func manifestRejectsSizesAndSettingsOutOfRange() {
        let sha = String(repeating: "a", count: 64)
        let base = "format=1\napp_id=x\ncurrent.version=1\ncurrent.abi=a\ncurrent.size=10\ncurrent.sha256=\(sha)\n"
            + "previous.version=1\nprevious.abi=a\nprevious.size=10\nprevious.sha256=\(sha)\n"
        #expect((try? Manifest.parse(Array(base.utf8), path: "manifest")) != nil)
        for extra in ["supervise.backoff_initial_ms=9223372036854775807", "trial.tries=-1", "remote.interval_s=abc"] {
            let error = #expect(throws: SwitchbackError.self) { try Manifest.parse(Array((base + extra + "\n").utf8), path: "manifest") }
            #expect(error?.code == .manifestInvalid)
        }
        let huge = base.replacingOccurrences(of: "current.size=10", with: "current.size=9223372036854775807")
        let error = #expect(throws: SwitchbackError.self) { try Manifest.parse(Array(huge.utf8), path: "manifest") }
        #expect(error?.code == .manifestInvalid)
    }

    @Test func historyLinesWithTimesOutOfRangeAreUnreadable() {
        let log = "v1\t\(yearTwoToThe31)\tswitch\tcurrent\tprevious\tcli\tx\nv1\t1795317164\tswitch\tcurrent\tprevious\tcli\ty\n"
        let (events, unreadable) = HistoryLog.parse(Array(log.utf8))
        #expect(events.count == 1 && unreadable == 1)
    }

    @Test func verifiedSlotsDropsSizesOutOfRange() {
        let sha = String(repeating: "b", count: 64)
        let text = "/a\t1\t2\t9223372036854775807\t4\t5\t\(sha)\t-\n/b\t1\t2\t3\t4\t5\t\(sha)\t-\n"
        #expect(VerifiedCache.parse(Array(text.utf8)).map(\.file) == ["/b"])
    }

    @Test func healthCountsAtIntMaxAreDamage() throws {
        // What once made every start trap at `failedStarts += 1`.
        let text = "format=2\nbuild=\(String(repeating: "b", count: 64))\nverdict=trial\ntries_left=1\nfailed_starts=\(Int.max)\nend=ok\n"
        let error = #expect(throws: SwitchbackError.self) { try HealthRecord.parse(Array(text.utf8), path: "health") }
        #expect(error?.code == .stateInvalid)
        #expect(error?.message.contains("failed_starts") == true)
    }
}
