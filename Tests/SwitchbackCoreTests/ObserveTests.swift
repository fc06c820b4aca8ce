import Foundation
import SwitchbackCore
import Testing

/// What an install exports (docs/monitoring.md): the metrics text, the journal datagram and
/// the counters, as pure values.
struct ObserveTests {
    static let snapshot = MetricsSnapshot(
        appID: "com.example.notes", install: "0123456789abcdef", rolloutBucket: 37, stateDirectory: "/var/lib/notes \"a\"",
        current: .init(version: "1.3.0", build: "abc", health: "bad", unmarkedStarts: 3),
        previous: .init(version: "1.2.0", build: "def", health: "good", unmarkedStarts: 0),
        activeSlot: .previous, source: "auto", rollback: true,
        remote: .init(acceptedSerial: 7, highestSeenSerial: 9, lastCheckAt: 1_795_317_164, lastSuccessAt: 1_795_317_000,
                      lastVerifiedAt: nil, heldExpiresAt: nil, outcome: "not_applicable", code: "outside_rollout",
                      consecutiveFailures: 0, isStale: false, maxStalenessSeconds: 86_400, nextCheckAt: 1_795_320_000),
        counts: { var counts = EventCounts(); counts.switches = 4; counts.rollbacks[.auto] = 2; counts.failedStarts = 1; return counts }(),
        writtenAt: 1_795_317_165)

    @Test func everyMetricHasHelpTypeAndTheInstallLabels() {
        let text = Self.snapshot.render()
        let lines = text.split(separator: "\n")
        let names = Set(lines.filter { !$0.hasPrefix("#") }.map { $0.prefix { $0 != "{" } })
        for name in names {
            #expect(lines.contains { $0.hasPrefix("# HELP \(name) ") }, "\(name) has HELP")
            #expect(lines.contains { $0 == "# TYPE \(name) gauge" || $0 == "# TYPE \(name) counter" }, "\(name) has TYPE")
            #expect(name.hasPrefix("switchback_"))
        }
        for line in lines where !line.hasPrefix("#") {
            #expect(line.contains("{app_id=\"com.example.notes\",install=\"0123456789abcdef\""), "\(line)")
        }
        #expect(text.contains("switchback_info{app_id=\"com.example.notes\",install=\"0123456789abcdef\",state_dir=\"/var/lib/notes \\\"a\\\"\"} 1\n"))
        #expect(text.contains("switchback_slot_health{app_id=\"com.example.notes\",install=\"0123456789abcdef\",health=\"bad\",slot=\"current\"} 1\n"))
        #expect(text.contains("switchback_rollbacks_total{app_id=\"com.example.notes\",install=\"0123456789abcdef\",source=\"auto\"} 2\n"))
        #expect(text.contains("switchback_remote_highest_seen_serial{app_id=\"com.example.notes\",install=\"0123456789abcdef\"} 9\n"))
        #expect(text.contains("switchback_remote_last_check_outcome{app_id=\"com.example.notes\",install=\"0123456789abcdef\",code=\"outside_rollout\",outcome=\"not_applicable\"} 1\n"))
        #expect(text.contains("switchback_slot_unmarked_starts{app_id=\"com.example.notes\",install=\"0123456789abcdef\",slot=\"current\"} 3\n"))
        #expect(text.contains("switchback_failed_starts_total{app_id=\"com.example.notes\",install=\"0123456789abcdef\"} 1\n"))
        #expect(text.contains("switchback_rollout_bucket_number{app_id=\"com.example.notes\",install=\"0123456789abcdef\"} 37\n"))
        // A timestamp never known is left out, not written as 0 (which PromQL would read as 1970).
        #expect(!text.contains("switchback_remote_last_verified_timestamp_seconds{"))
    }

    @Test func withoutARemoteURLThereAreNoRemoteMetrics() {
        var snapshot = Self.snapshot
        snapshot.remote = nil
        #expect(!snapshot.render().contains("switchback_remote_"))
    }

    @Test func theJournalDatagramUsesTheBinaryFormOnlyForMultilineValues() {
        let entry = JournalEntry(kind: .rollback, message: "Rolled back.", fields: [("SWITCHBACK_REASON", "two\nlines")])
        let bytes = entry.datagram()
        let expectedStart = Array("MESSAGE=Rolled back.\nMESSAGE_ID=b196af21f15b4019804d09196588d910\nPRIORITY=5\nSYSLOG_IDENTIFIER=switchback\nSWITCHBACK_EVENT=rollback\nSWITCHBACK_REASON\n".utf8)
        #expect(Array(bytes.prefix(expectedStart.count)) == expectedStart)
        #expect(Array(bytes.dropFirst(expectedStart.count)) == [9, 0, 0, 0, 0, 0, 0, 0] + Array("two\nlines\n".utf8))
    }

    @Test func messageIDsAreDistinctAndJournaldShaped() {
        let ids = JournalEntry.Kind.allCases.map(\.messageID)
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.count == 32 && $0.allSatisfy { "0123456789abcdef".contains($0) } })
    }

    /// docs/monitoring.md's table names every kind with its id and priority, as journald gets them.
    @Test func theMonitoringPageListsEveryJournalKind() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/monitoring.md")
        let text = try String(contentsOf: page, encoding: .utf8)
        for kind in JournalEntry.Kind.allCases where kind != .other {
            #expect(text.contains("| `\(kind.rawValue)` | `\(kind.messageID)` | \(kind.priority) |"), "\(kind.rawValue) is not in docs/monitoring.md's table")
        }
        #expect(text.contains("| (any newer kind) | `\(JournalEntry.Kind.other.messageID)` | \(JournalEntry.Kind.other.priority) |"))
    }

    @Test func countsFollowTheHistory() {
        let events = [
            SwitchHistoryEvent(time: 1, kind: .switch, from: .current, to: .previous, source: .remote, reason: nil),
            SwitchHistoryEvent(time: 2, kind: .switch, from: .previous, to: .current, source: .cli, reason: nil),
            SwitchHistoryEvent(time: 3, kind: .fallback, from: .current, to: .previous, source: .auto, reason: nil),
            SwitchHistoryEvent(time: 4, kind: .hungStart, from: .current, to: .current, source: .auto, reason: nil),
            SwitchHistoryEvent(time: 5, kind: .release, from: .previous, to: .current, source: .auto, reason: nil),
        ]
        let counts = EventCounts(events: events)
        #expect(counts.switches == 2)
        #expect(counts.rollbacks == [.remote: 1])
        #expect(counts.failedStarts == 2)
    }

    @Test func probationMetricsOnlyWithAnalysisAndCountedFromTheHistory() throws {
        #expect(!Self.snapshot.render().contains("switchback_probation"))
        #expect(!Self.snapshot.render().contains("switchback_analysis_"))
        var snapshot = Self.snapshot
        snapshot.hasAnalysis = true
        snapshot.probation = ProbationRecord(slot: .current, version: "1.3.0", build: String(repeating: "ab", count: 32),
                                             startedAt: 1_795_317_100_000, endsAt: 1_795_317_160_000, state: .failed)
        snapshot.counts = EventCounts(events: [
            SwitchHistoryEvent(time: 1, kind: .probationFailed, from: .current, to: .current, source: .auto, reason: "x"),
            SwitchHistoryEvent(time: 2, kind: .probationPassed, from: .current, to: .current, source: .auto, reason: "y"),
            SwitchHistoryEvent(time: 3, kind: .probationFailed, from: .current, to: .current, source: .auto, reason: "z"),
            SwitchHistoryEvent(time: 4, kind: .probationPromoted, from: .current, to: .current, source: .auto, reason: "w"),
            SwitchHistoryEvent(time: 5, kind: .probationWouldRollBack, from: .current, to: .current, source: .auto, reason: "v"),
            SwitchHistoryEvent(time: 6, kind: .probationHeld, from: .current, to: .current, source: .auto, reason: "u"),
        ])
        let text = snapshot.render()
        let base = "app_id=\"com.example.notes\",install=\"0123456789abcdef\""
        #expect(text.contains("switchback_probation{\(base),build=\"\(String(repeating: "ab", count: 32))\",slot=\"current\",state=\"failed\",version=\"1.3.0\"} 1\n"))
        #expect(text.contains("switchback_probation_ends_timestamp_seconds{\(base)} 1795317160\n"))
        #expect(text.contains("switchback_analysis_results_total{\(base),result=\"failed\"} 2\n"))
        #expect(text.contains("switchback_analysis_results_total{\(base),result=\"passed\"} 1\n"))
        #expect(text.contains("switchback_analysis_results_total{\(base),result=\"inconclusive\"} 0\n"))
        #expect(text.contains("switchback_analysis_results_total{\(base),result=\"held\"} 1\n"))
        #expect(text.contains("switchback_analysis_results_total{\(base),result=\"would_roll_back\"} 1\n"))
        #expect(text.contains("switchback_analysis_results_total{\(base),result=\"would_hold\"} 0\n"))
        #expect(!text.contains("switchback_hook_"), "no hooks configured, no hook metrics")
        snapshot.hooks = MetricsSnapshot.Hooks(delivered: 7, failed: 2, dropped: 1, queued: 3)
        let hooked = snapshot.render()
        #expect(hooked.contains("# TYPE switchback_hook_events_total counter\n"))
        #expect(hooked.contains("switchback_hook_events_total{\(base),outcome=\"delivered\"} 7\n"))
        #expect(hooked.contains("switchback_hook_events_total{\(base),outcome=\"failed\"} 2\n"))
        #expect(hooked.contains("switchback_hook_events_total{\(base),outcome=\"dropped\"} 1\n"))
        #expect(hooked.contains("switchback_hook_queue_length{\(base)} 3\n"))
        // A counts file written before the verdicts had one word each: `successful` is `passed`.
        let path = NSTemporaryDirectory() + "switchback-counts-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let directory = StateDirectory(path: path)
        try "switches=3\nfailed_starts=0\nanalysis_successful=4\nanalysis_failed=1\n"
            .write(toFile: EventCounts.path(in: directory), atomically: true, encoding: .utf8)
        #expect(EventCounts.load(from: directory)?.analysisResults == ["passed": 4, "failed": 1])
        // Old history lines still parse; the new kinds read back.
        #expect(SwitchHistoryEvent(line: SwitchHistoryEvent(time: 5, kind: .probationAborted, from: .current, to: .current, source: .auto, reason: "r").serialized().dropLast())?.kind == .probationAborted)
        #expect(SwitchHistoryEvent(line: "v1\t5\tswitch\tcurrent\tprevious\tcli\t")?.kind == .switch)
    }

    @Test func fileNamesAreSafeAndNamedByTheInstallID() {
        let id = "0123456789abcdef0123456789abcdef"
        #expect(Observer.fileName(appID: "com.example/notes x", install: id) == "switchback-com.example_notes_x-\(id).prom")
        // The label earlier versions wrote (a hash of the path, the same on every host with
        // the same layout): kept only to remove their file.
        let legacy = Observer.legacyInstallLabel(for: StateDirectory(path: "/var/lib/a"))
        #expect(legacy.count == 16 && legacy != Observer.legacyInstallLabel(for: StateDirectory(path: "/var/lib/b")))
        #expect(RemoteStore.isInstallID(id) && !RemoteStore.isInstallID(legacy) && !RemoteStore.isInstallID(id.uppercased())
                && !RemoteStore.isInstallID("0123456789abcdef0123456789abcde\"") && !RemoteStore.isInstallID(id + "0"))
    }

    @Test func historyEventsBecomeEntriesWithTheirKindAndSerial() {
        var settings = KeyValueText()
        settings.append("remote.url", "https://example.com/d.json")
        let current = Manifest.SlotRecord(version: "1.3.0", build: "b1", abiStamp: "s", size: 1, sha256: String(repeating: "1", count: 64))
        let previous = Manifest.SlotRecord(version: "1.2.0", build: "b0", abiStamp: "s", size: 1, sha256: String(repeating: "0", count: 64))
        let manifest = Manifest(appID: "com.example.notes", current: current, previous: previous, settings: settings)
        let directory = StateDirectory(path: "/var/lib/notes")
        let remote = SwitchHistoryEvent(time: 1, kind: .switch, from: .current, to: .previous, source: .remote,
                                  reason: "1.3.0 corrupts notes (directive serial 42)")
        let entry = Observer.journalEntry(for: remote, manifest: manifest, directory: directory, install: "0123456789abcdef0123456789abcdef")
        #expect(entry.kind == .rollback)
        #expect(entry.fields.first { $0.key == "SWITCHBACK_INSTALL" }?.value == "0123456789abcdef0123456789abcdef")
        #expect(entry.message == "Rolled back to the previous slot (1.2.0) by remote: 1.3.0 corrupts notes (directive serial 42).")
        #expect(entry.fields.first { $0.key == "SWITCHBACK_SERIAL" }?.value == "42")
        let fallback = SwitchHistoryEvent(time: 1, kind: .fallback, from: .current, to: .previous, source: .auto, reason: "The current slot is missing.")
        let failed = Observer.journalEntry(for: fallback, manifest: manifest, directory: directory)
        #expect(failed.kind == .fallback && failed.kind.priority == 4)
        #expect(failed.message == "The current slot could not run; the previous slot (1.2.0) ran instead: The current slot is missing.")
        #expect(!failed.fields.contains { $0.key == "SWITCHBACK_SERIAL" })
        let forward = SwitchHistoryEvent(time: 1, kind: .switch, from: .previous, to: .current, source: .cli, reason: nil)
        #expect(Observer.journalEntry(for: forward, manifest: manifest, directory: directory).message
                == "Rolled forward to the current slot (1.3.0) by cli: no reason given.")
    }
}
