import Foundation
import Testing
import SwitchbackCore
import RollbackCtlKit
#if canImport(Glibc)
import Glibc
#endif

/// Outcomes into existing monitoring (docs/monitoring.md), through the real binaries: the
/// metrics file checked by Debian's real `promtool` and served by a real
/// `prometheus-node-exporter`, and journal entries received on a socket of the test's own.
@Suite struct MonitoringTests {
    static let promtool = "/usr/bin/promtool"
    static let nodeExporter = "/usr/bin/prometheus-node-exporter"

    /// A bundle whose manifest names a textfile directory, and that directory.
    static func bundleWithMetrics() throws -> (TestBundle, String) {
        let t = try TestBundle()
        let directory = t.directory + "/textfile"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try t.setManifestSetting("metrics.textfile_dir", directory)
        return (t, directory)
    }

    static func promFiles(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".prom") }.sorted()
    }

    /// The value of the one series of `name` whose labels include every one of `labels`.
    static func value(_ text: String, _ name: String, _ labels: [String] = []) -> String? {
        text.split(separator: "\n").first { line in
            line.hasPrefix(name + "{") && labels.allSatisfy { line.contains($0) }
        }.flatMap { $0.split(separator: " ").last.map(String.init) }
    }

    @Test func aVerdictWithoutASwitchRewritesTheMetricsFile() throws {
        let (t, directory) = try Self.bundleWithMetrics()
        let marked = try t.rollbackctl("mark-good", "previous")
        #expect(marked.status == 0, "\(marked)")
        let files = try Self.promFiles(in: directory)
        try #require(files.count == 1, "mark-good writes the file though no history event was appended: \(files)")
        let text = try String(contentsOfFile: directory + "/" + files[0], encoding: .utf8)
        #expect(Self.value(text, "switchback_slot_health", ["health=\"good\"", "slot=\"previous\""]) == "1", "\(text)")
        #expect(Self.value(text, "switchback_switches_total") == "0")
    }

    @Test func aRollbackWritesAMetricsFileThatPromtoolAcceptsAndNodeExporterServes() throws {
        let (t, directory) = try Self.bundleWithMetrics()
        // Nothing happened yet: no file (a start that changes nothing writes nothing).
        #expect(try t.launcher("version").status == 0)
        #expect(try Self.promFiles(in: directory).isEmpty)

        let back = try t.rollbackctl("rollback", "--reason", "1.2.0 corrupts notes")
        #expect(back.status == 0, "\(back)")
        let files = try Self.promFiles(in: directory)
        try #require(files.count == 1, "one file per install: \(files)")
        #expect(files[0].hasPrefix("switchback-dev.switchback.sample-") && files[0].count == "switchback-dev.switchback.sample-".count + 32 + 5)
        let text = try String(contentsOfFile: directory + "/" + files[0], encoding: .utf8)
        let appID = "app_id=\"dev.switchback.sample\""
        #expect(Self.value(text, "switchback_rollback", [appID]) == "1")
        #expect(Self.value(text, "switchback_active_slot", ["slot=\"previous\""]) == "1")
        #expect(Self.value(text, "switchback_active_slot", ["slot=\"current\""]) == "0")
        #expect(Self.value(text, "switchback_rollback_source", ["source=\"cli\""]) == "1")
        #expect(Self.value(text, "switchback_rollbacks_total", ["source=\"cli\""]) == "1")
        #expect(Self.value(text, "switchback_switches_total") == "1")
        #expect(Self.value(text, "switchback_slot_info", ["slot=\"current\"", "version=\"\(t.currentVersion)\""]) == "1")
        #expect(Self.value(text, "switchback_slot_info", ["slot=\"previous\"", "version=\"\(t.previousVersion)\""]) == "1")
        #expect(!text.contains("switchback_remote_"), "no remote metrics for a bundle without a directive URL")

        // promtool: valid exposition format, and no lint complaint.
        let checked = try runProcess("/bin/bash", ["-c", "\(Self.promtool) check metrics < '\(directory)/\(files[0])'"])
        #expect(checked.status == 0, "\(checked)")
        #expect(checked.stdout.isEmpty && checked.stderr.isEmpty, "promtool lint: \(checked)")

        // A real node_exporter serves it.
        let port = try unusedLocalPort()
        let exporter = try SpawnedProcess(Self.nodeExporter, [
            "--collector.disable-defaults", "--collector.textfile",
            "--collector.textfile.directory=\(directory)", "--web.listen-address=127.0.0.1:\(port)",
        ], environment: [:], stderr: t.directory + "/node-exporter.log")
        defer { kill(exporter.pid, SIGKILL); exporter.wait() }
        func scrape() -> String { (try? runProcess("/usr/bin/curl", ["-sf", "http://127.0.0.1:\(port)/metrics"]).stdout) ?? "" }
        #expect(waitUntil(seconds: 20) { scrape().contains("switchback_rollback{") })
        var served = scrape()
        #expect(Self.value(served, "switchback_rollback", [appID]) == "1")
        #expect(Self.value(served, "switchback_rollbacks_total", ["source=\"cli\""]) == "1")
        #expect(Self.value(served, "node_textfile_scrape_error") == nil || served.contains("node_textfile_scrape_error 0"))

        // The roll-forward rewrites it; the counters keep counting.
        #expect(try t.rollbackctl("rollforward", "--reason", "fixed").status == 0)
        #expect(waitUntil(seconds: 10) { Self.value(scrape(), "switchback_rollback", [appID]) == "0" })
        served = scrape()
        #expect(Self.value(served, "switchback_switches_total") == "2")
        #expect(Self.value(served, "switchback_rollbacks_total", ["source=\"cli\""]) == "1")
        #expect(Self.value(served, "switchback_active_slot", ["slot=\"current\""]) == "1")
        #expect(try Self.promFiles(in: directory).count == 1)
    }

    @Test func syncExportsTheRemoteViewAndRefusalsReachTheJournal() throws {
        let fleet = try RemoteDirectiveTests.Fleet()
        let t = fleet.t
        let directory = t.directory + "/textfile"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try t.setManifestSetting("metrics.textfile_dir", directory)
        let server = try LocalHTTPServer.staticFiles(root: fleet.www)
        defer { server.stop() }
        try t.setManifestSetting("remote.url", server.url("/directive.json"))
        let journal = try JournalListener(directory: t.directory)

        try fleet.publish("previous", serial: 7)
        let synced = try t.run(t.bundle + "/bin/rollbackctl", ["sync"], environment: journal.environment)
        #expect(synced.status == 0, "\(synced)")
        let rollback = journal.receive().first ?? [:]
        #expect(rollback["SWITCHBACK_EVENT"] == "rollback")
        #expect(rollback["SWITCHBACK_SOURCE"] == "remote")
        #expect(rollback["SWITCHBACK_SERIAL"] == "7")
        let file = directory + "/" + (try Self.promFiles(in: directory).first ?? "")
        var text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(Self.value(text, "switchback_remote_accepted_serial") == "7")
        #expect(Self.value(text, "switchback_remote_last_check_outcome", ["outcome=\"applied\""]) == "1")
        #expect(Self.value(text, "switchback_rollback_source", ["source=\"remote\""]) == "1")
        #expect(Self.value(text, "switchback_rollbacks_total", ["source=\"remote\""]) == "1")
        #expect(Self.value(text, "switchback_remote_consecutive_failures") == "0")
        #expect(Self.value(text, "switchback_remote_next_check_timestamp_seconds").flatMap { Int($0) } ?? 0 > Int(Date().timeIntervalSince1970))

        // A directive signed by a key the bundle does not trust: refused, in the journal and the file.
        let stranger = t.directory + "/stranger"
        #expect(try t.rollbackctl("keygen", "--out", stranger).status == 0)
        try fleet.publish("current", serial: 8, key: stranger + "/directive.key")
        let refused = try t.run(t.bundle + "/bin/rollbackctl", ["sync"], environment: journal.environment)
        #expect(refused.status == 1)
        let entry = journal.receive().first ?? [:]
        #expect(entry["SWITCHBACK_EVENT"] == "remote_refused")
        #expect(entry["MESSAGE_ID"] == "394131486ebf4b1291d60290ab2f0f67")
        #expect(entry["PRIORITY"] == "4")
        #expect(entry["SWITCHBACK_CODE"] == "untrusted_key")
        #expect(entry["SWITCHBACK_APP_ID"] == "dev.switchback.sample")
        #expect(entry["MESSAGE"].map { "Error: \($0)\n" == refused.stderr } == true, "MESSAGE is the sentence sync printed: \(entry)")
        text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(Self.value(text, "switchback_remote_last_check_outcome", ["outcome=\"refused\"", "code=\"untrusted_key\""]) == "1")
        #expect(Self.value(text, "switchback_remote_accepted_serial") == "7")
        let checked = try runProcess("/bin/bash", ["-c", "\(Self.promtool) check metrics < '\(file)'"])
        #expect(checked.status == 0 && checked.stdout.isEmpty && checked.stderr.isEmpty, "\(checked)")
    }

    @Test func aSwitchIsOneJournalEntryWithItsExactFields() throws {
        let t = try TestBundle()
        let journal = try JournalListener(directory: t.directory)
        let back = try t.run(t.bundle + "/bin/rollbackctl", ["rollback", "--reason", "notes corrupted"], environment: journal.environment)
        #expect(back.status == 0, "\(back)")
        let entries = journal.receive(count: 2, within: 3)
        try #require(entries.count == 1, "one entry per switch: \(entries)")
        // The event's id (a hook's payload carries the same: docs/hooks.md), 32 hex digits.
        var entry = entries[0]
        let removed = entry.removeValue(forKey: "SWITCHBACK_EVENT_ID")
        let id = try #require(removed)
        #expect(id.utf8.count == 32 && id.allSatisfy(\.isHexDigit), "\(id)")
        #expect(entry == [
            "MESSAGE": "Rolled back to the previous slot (\(t.previousVersion)) by cli: notes corrupted.",
            "MESSAGE_ID": "b196af21f15b4019804d09196588d910",
            "PRIORITY": "5",
            "SYSLOG_IDENTIFIER": "switchback",
            "SWITCHBACK_EVENT": "rollback",
            "SWITCHBACK_APP_ID": "dev.switchback.sample",
            "SWITCHBACK_SLOT": "previous",
            "SWITCHBACK_FROM_SLOT": "current",
            "SWITCHBACK_VERSION": t.previousVersion,
            "SWITCHBACK_SOURCE": "cli",
            "SWITCHBACK_REASON": "notes corrupted",
            "SWITCHBACK_INSTALL": try String(contentsOfFile: t.state + "/install-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
            "SWITCHBACK_STATE_DIR": t.state,
        ])
    }

    @Test func aFailedStartIsAWarningInTheJournalAndCounted() throws {
        let (t, directory) = try Self.bundleWithMetrics()
        let journal = try JournalListener(directory: t.directory)
        try shell("truncate", "-s", "4096", t.slotPath(.current))
        let run = try t.run(t.bundle + "/bin/launcher", ["version"], environment: journal.environment)
        #expect(run.status == 0, "the previous slot ran instead: \(run)")
        let entry = journal.receive().first ?? [:]
        #expect(entry["SWITCHBACK_EVENT"] == "fallback")
        #expect(entry["MESSAGE_ID"] == "2c85020a004c443b8f98edc39f828e68")
        #expect(entry["PRIORITY"] == "4")
        #expect(entry["SWITCHBACK_SLOT"] == "previous")
        #expect(entry["SWITCHBACK_FROM_SLOT"] == "current")
        #expect(entry["MESSAGE"]?.hasPrefix("The current slot could not run; the previous slot (\(t.previousVersion)) ran instead: The current slot at ") == true)
        let file = directory + "/" + (try Self.promFiles(in: directory).first ?? "")
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(Self.value(text, "switchback_failed_starts_total") == "1")
    }

    @Test func theDocumentedFleetQueriesPassPromtool() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/monitoring").path
        let checked = try runProcess(Self.promtool, ["check", "rules", docs + "/switchback.rules.yml"])
        #expect(checked.status == 0, "\(checked)")
        #expect(checked.stdout.contains("SUCCESS: 8 rules found"), "\(checked)")
        let tested = try runProcess("/bin/bash", ["-c", "cd '\(docs)' && \(Self.promtool) test rules switchback.rules.test.yml"])
        #expect(tested.status == 0, "\(tested)")
    }

    static var docsDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs").path
    }

    /// The `$version` queries of docs/rollout.md's table "PromQL over what installs export",
    /// in the table's order.
    static func documentedRolloutQueries() throws -> [String] {
        let page = try String(contentsOfFile: docsDirectory + "/rollout.md", encoding: .utf8)
        guard let start = page.range(of: "## Worked example: PromQL over what installs export"),
              let end = page.range(of: "### A real run", range: start.upperBound..<page.endIndex) else { return [] }
        return page[start.upperBound..<end.lowerBound].split(separator: "\n").compactMap { line in
            guard line.hasPrefix("| "), line.contains("$version"), let cell = line.split(separator: "|").last,
                  let open = cell.firstIndex(of: "`"), let close = cell.lastIndex(of: "`"), open < close else { return nil }
            return String(cell[cell.index(after: open)..<close])
        }
    }

    /// docs/rollout.md's query of the installs that rolled back by themselves in a window.
    static func documentedRollbacksQuery() throws -> String {
        try #require(try documentedRolloutQueries().first { $0.contains("switchback_rollbacks_total{source=\"auto\"}") })
    }

    /// The rollout queries, as the page gives them, over four installs on two hosts with the
    /// same layout (docs/monitoring/rollout-queries.test.yml): one result per query, an
    /// automatic rollback outside the window healthy, one inside and a fresh install's counted.
    @Test func theDocumentedRolloutQueriesJoinOneToOneAndJudgeAWindow() throws {
        let queries = try Self.documentedRolloutQueries()
        #expect(queries.count == 5, "\(queries)")
        let tests = try String(contentsOfFile: Self.docsDirectory + "/monitoring/rollout-queries.test.yml", encoding: .utf8)
        for query in queries where !query.contains("switchback_probation") {
            let substituted = query.replacingOccurrences(of: "$version", with: "1.3.0")
            #expect(tests.contains("expr: '\(substituted)'"), "not tested by rollout-queries.test.yml: \(substituted)")
        }
        let tested = try runProcess("/bin/bash", ["-c", "cd '\(Self.docsDirectory)/monitoring' && \(Self.promtool) test rules rollout-queries.test.yml"])
        #expect(tested.status == 0 && tested.stdout.contains("SUCCESS"), "\(tested)")
    }

    /// Each install's metrics are labelled with its own install id (the file `install-id`),
    /// the id its rollout bucket comes from, and export that bucket: SHA-256 of "ID:APP",
    /// the first 8 bytes big-endian, mod 100, computed here with sha256sum.
    @Test func theInstallLabelIsTheInstallIDAndTheBucketIsExported() throws {
        let (t, directory) = try Self.bundleWithMetrics()
        let appID = try t.manifestValue("app_id")
        #expect(try t.rollbackctl("rollback", "--reason", "identity").status == 0)
        let id = try String(contentsOfFile: t.state + "/install-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(id)")
        let files = try Self.promFiles(in: directory)
        #expect(files == ["switchback-\(appID)-\(id).prom"], "\(files)")
        let text = try String(contentsOfFile: directory + "/" + files[0], encoding: .utf8)
        let digest = try runProcess("/bin/bash", ["-c", "printf '%s' '\(id):\(appID)' | sha256sum"]).stdout.prefix(16)
        let bucket = try #require(UInt64(digest, radix: 16)) % 100
        #expect(Self.value(text, "switchback_rollout_bucket_number") == String(bucket), "\(text)")
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            #expect(line.contains("install=\"\(id)\""), "\(line)")
        }
    }

    /// Two hosts with the same layout: the same bundle path and state directory path, in two
    /// mount namespaces (`unshare -m`, a different directory mounted at the state path in
    /// each). Their files, their `install` labels and their journal ids differ.
    @Test(.enabled(if: geteuid() == 0, "needs root for mount namespaces"))
    func twoHostsWithTheSameLayoutAreTwoInstalls() throws {
        let (t, directory) = try Self.bundleWithMetrics()
        let appID = try t.manifestValue("app_id")
        var ids: [String] = []
        for host in ["h1", "h2"] {
            let hostState = t.directory + "/" + host + "-state"
            try FileManager.default.createDirectory(atPath: hostState, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.createDirectory(atPath: t.state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let result = try runProcess("/usr/bin/unshare", ["-m", "/bin/bash", "-c",
                "mount --make-rprivate / && mount --bind '\(hostState)' '\(t.state)' && SWITCHBACK_STATE_DIR='\(t.state)' '\(t.bundle)/bin/rollbackctl' rollback --reason '\(host)'"])
            #expect(result.status == 0, "\(result)")
            ids.append(try String(contentsOfFile: hostState + "/install-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        #expect(ids.count == 2 && ids[0] != ids[1], "\(ids)")
        let files = try Self.promFiles(in: directory)
        #expect(Set(files) == Set(ids.map { "switchback-\(appID)-\($0).prom" }), "\(files)")
        for (file, id) in zip(ids.map { "switchback-\(appID)-\($0).prom" }, ids) {
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            #expect(text.contains("switchback_info{app_id=\"\(appID)\",install=\"\(id)\",state_dir=\"\(t.state)\"} 1"), "\(text)")
        }
    }

    /// A file an earlier version wrote, named by the hash of the state directory's path, is
    /// removed when the install's file is written: its series would stay beside the new ones.
    @Test func theFileAnEarlierVersionNamedByThePathIsRemoved() throws {
        let (t, directory) = try Self.bundleWithMetrics()
        let legacy = "switchback-\(try t.manifestValue("app_id"))-\(Observer.legacyInstallLabel(for: StateDirectory(path: t.state))).prom"
        try "switchback_info{app_id=\"x\",install=\"old\"} 1\n".write(toFile: directory + "/" + legacy, atomically: true, encoding: .utf8)
        #expect(try t.rollbackctl("rollback", "--reason", "upgrade").status == 0)
        let files = try Self.promFiles(in: directory)
        #expect(files.count == 1 && files[0] != legacy, "\(files)")
    }

    /// The active slot the metrics export is the one the launcher's planner names, as
    /// `rollbackctl status` does, not the flag: here a current slot that fails its checks (the
    /// flag says current; the launcher falls back to the previous slot and records it).
    @Test func theActiveSlotIsThePlansNotTheFlags() throws {
        let (t, directory) = try Self.bundleWithMetrics()
        try Data("not an ELF file".utf8).write(to: URL(fileURLWithPath: t.slotPath(.current)))
        let run = try t.launcher()
        #expect(run.stdout.hasPrefix(t.greeting(.previous)), "\(run)")
        let state = (try? String(contentsOfFile: t.state + "/state", encoding: .utf8)) ?? ""
        #expect(!state.contains("rollback=true"), "the flag still says current: \(state)")
        let status = try t.rollbackctl("status", "--json")
        let json = try JSONDecoder().decode(StatusDocument.self, from: Data(status.stdout.utf8))
        #expect(json.activeSlot == "previous", "\(status)")
        let files = try Self.promFiles(in: directory)
        try #require(files.count == 1, "\(files)")
        let text = try String(contentsOfFile: directory + "/" + files[0], encoding: .utf8)
        #expect(Self.value(text, "switchback_active_slot", ["slot=\"previous\""]) == "1", "\(text)")
        #expect(Self.value(text, "switchback_active_slot", ["slot=\"current\""]) == "0", "\(text)")
    }

    @Test func aMissingMetricsDirectoryIsAWarningAndTheSwitchStillHappens() throws {
        let t = try TestBundle()
        let missing = t.directory + "/no-such-textfile-dir"
        try t.setManifestSetting("metrics.textfile_dir", missing)
        let back = try t.rollbackctl("rollback")
        #expect(back.status == 0)
        #expect(back.stdout == "Rolled back: the next start runs the previous slot (\(t.previousVersion)).\n")
        let file = "\(missing)/switchback-dev.switchback.sample-"
        #expect(back.stderr.hasPrefix("Warning: the metrics file \(file)"), "\(back)")
        #expect(back.stderr.contains("failed: No such file or directory); create \(missing) or rebuild the bundle with scripts/bundle --metrics-dir DIR. The switch itself is done.\n"), "\(back)")
        #expect(back.stderr.split(separator: "\n").count == 1, "one sentence: \(back)")
        #expect(try t.status().activeSlot == "previous")
    }

    @Test func theMetricsFileIsWorldReadableWhateverTheUmask() throws {
        let (t, directory) = try Self.bundleWithMetrics()
        let back = try t.run("/bin/sh", ["-c", "umask 077; exec \"$0\" rollback", t.bundle + "/bin/rollbackctl"])
        #expect(back.status == 0, "\(back)")
        let files = try Self.promFiles(in: directory)
        try #require(files.count == 1, "\(files)")
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/" + files[0])[.posixPermissions] as? Int
        #expect(mode == 0o644, "mode \(String(mode ?? 0, radix: 8)) under umask 077")
    }

    @Test func aMetricsDirectoryOthersCanWriteIsRefusedLikeAStateDirectory() throws {
        let (t, directory) = try Self.bundleWithMetrics()
        #expect(chmod(directory, 0o777) == 0)
        let back = try t.rollbackctl("rollback")
        #expect(back.status == 0, "\(back)")
        #expect(back.stdout == "Rolled back: the next start runs the previous slot (\(t.previousVersion)).\n")
        let file = "\(directory)/switchback-dev.switchback.sample-"
        #expect(back.stderr.hasPrefix("Warning: the metrics file \(file)"), "\(back)")
        #expect(back.stderr.hasSuffix(".prom was not written: The metrics directory \(directory) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(directory)'. The switch itself is done.\n"), "\(back)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "nothing is written there")
        #expect(try t.status().activeSlot == "previous")
    }

    @Test func withoutAJournalSocketTheSwitchIsUnchanged() throws {
        let t = try TestBundle()
        let back = try t.rollbackctl("rollback", environment: ["SWITCHBACK_JOURNAL_SOCKET": t.directory + "/no-such-socket"])
        #expect(back.status == 0)
        #expect(back.stderr.isEmpty)
        #expect(try t.status().activeSlot == "previous")
    }
}
