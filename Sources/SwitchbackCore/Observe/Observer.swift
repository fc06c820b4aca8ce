#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

/// Where an install's outcomes reach existing monitoring (docs/monitoring.md): every history
/// event and every refused directive becomes one journald entry, and the install's metrics
/// file for node_exporter's textfile collector (`metrics.textfile_dir`) is rewritten.
///
/// Called on event paths only (`HistoryLog.append`, a sync's `RemoteSchedule.recordAttempt`),
/// never on a start that changes nothing. Never throws and never fails the event: monitoring
/// that cannot be written is skipped.
public enum Observer {
    /// Whether this process already said that the metrics file cannot be written. Only the
    /// event paths of single-threaded commands (and the launcher's) touch it.
    nonisolated(unsafe) static var hasWarned = false

    /// The manifest setting naming the textfile collector's directory.
    public static let textfileDirectorySetting = "metrics.textfile_dir"

    /// After `event` was appended to the history at `historyPath` (the caller holds the state
    /// lock): counts it, sends its journal entry, rewrites the metrics file. The manifest is
    /// the bundle's of the running executable (`bin/..`); without one (a library's tests)
    /// nothing is done.
    public static func historyAppended(_ event: SwitchHistoryEvent, historyPath: String) {
        let directory = StateDirectory(path: FileSystem.parentDirectory(of: historyPath))
        guard let manifest = bundleManifest() else { return }
        var counts: EventCounts
        if var known = EventCounts.load(from: directory) {
            known.add(event)
            counts = known
        } else {
            counts = EventCounts(events: (try? HistoryLog(path: historyPath).read().events) ?? [event])
        }
        try? counts.save(to: directory)
        let install = try? RemoteStore(directory: directory).installID()
        let id = HookEvent.newID()
        journalEntry(for: event, manifest: manifest, directory: directory, install: install, eventID: id).send()
        refreshMetrics(in: directory, manifest: manifest)
        if HookSettings.areConfigured(manifest.settings), let root = Launcher.bundleRoot() {
            let hooked = HookEvent(id: id, event: event, appID: manifest.appID, install: install ?? "",
                                   version: manifest[event.to].version, host: HookEvent.hostName())
            if let problem = HookQueue(directory: directory).enqueue(hooked) ?? HookDeliverer.start(bundleRoot: root, directory: directory) {
                hookWarning(problem)
            }
        }
    }

    /// Says once per process that a hook event was not queued or its deliverer not started.
    private static func hookWarning(_ problem: String) {
        _ = warnOnce("Warning: the hooks were not told of this event: \(problem.hasSuffix(".") ? String(problem.dropLast()) : problem). The switch itself is done.")
    }

    /// After a sync recorded its outcome: a refused or unapplied directive's journal entry,
    /// and the metrics file.
    public static func checkRecorded(in directory: StateDirectory, manifest: Manifest) {
        let record = RemoteStore(directory: directory).load().record
        if let entry = journalEntry(forCheck: record, manifest: manifest, directory: directory) { entry.send() }
        refreshMetrics(in: directory, manifest: manifest)
    }

    /// The journal entry of a history event.
    /// `install` is the install id (`SWITCHBACK_INSTALL`), the metrics' `install` label.
    public static func journalEntry(for event: SwitchHistoryEvent, manifest: Manifest, directory: StateDirectory,
                                    install: String? = nil, eventID: String? = nil) -> JournalEntry {
        let reason = event.reason ?? "no reason given"
        let version = manifest[event.to].version
        let kind: JournalEntry.Kind
        let message: String
        switch event.kind.rawValue {
        case "switch":
            kind = event.to == .previous ? .rollback : .rollforward
            message = event.to == .previous
                ? "Rolled back to the previous slot (\(version)) by \(event.source.rawValue): \(reason)"
                : "Rolled forward to the current slot (\(version)) by \(event.source.rawValue): \(reason)"
        case "fallback":
            kind = .fallback
            message = "The \(event.from.rawValue) slot could not run; the \(event.to.rawValue) slot (\(version)) ran instead: \(reason)"
        case "remote_stale":
            // The reason is the whole sentence (what is stale, since when, what to do).
            kind = .remoteStale
            message = reason
        case _ where event.kind.rawValue.hasPrefix("probation_"):
            // The reason is the whole verdict ("the current build (1.3.0) failed its 60 s bake window: ...").
            kind = JournalEntry.Kind(rawValue: event.kind.rawValue) ?? .other
            message = HealthPolicy.capitalized(reason)
        default:
            kind = JournalEntry.Kind(rawValue: event.kind.rawValue) ?? .other
            message = "\(event.kind.rawValue.replacingUnderscores()) (\(event.from.rawValue) to \(event.to.rawValue) slot, \(version)): \(reason)"
        }
        var fields: [(key: String, value: String)] = [
            ("SWITCHBACK_APP_ID", manifest.appID), ("SWITCHBACK_SLOT", event.to.rawValue),
            ("SWITCHBACK_FROM_SLOT", event.from.rawValue), ("SWITCHBACK_VERSION", version),
            ("SWITCHBACK_SOURCE", event.source.rawValue), ("SWITCHBACK_REASON", reason),
        ]
        if event.source == .remote, let serial = directiveSerial(in: reason) { fields.append(("SWITCHBACK_SERIAL", String(serial))) }
        if let install { fields.append(("SWITCHBACK_INSTALL", install)) }
        // The id a hook's payload carries too (`HookEvent`): the two join on it.
        if let eventID { fields.append(("SWITCHBACK_EVENT_ID", eventID)) }
        fields.append(("SWITCHBACK_STATE_DIR", directory.path))
        return JournalEntry(kind: kind, message: message.hasSuffix(".") ? message : message + ".", fields: fields)
    }

    /// The journal entry of a check that refused a directive or could not apply it; nil for
    /// any other outcome (an unreachable server is in the metrics, not the journal).
    public static func journalEntry(forCheck record: RemoteRecord, manifest: Manifest, directory: StateDirectory) -> JournalEntry? {
        let kind: JournalEntry.Kind
        switch record.outcome {
        case "refused": kind = .remoteRefused
        case "not_applied": kind = .remoteNotApplied
        default: return nil
        }
        var fields: [(key: String, value: String)] = [("SWITCHBACK_APP_ID", manifest.appID)]
        if let code = record.code { fields.append(("SWITCHBACK_CODE", code)) }
        if let serial = record.reason.flatMap(directiveSerial(in:)) { fields.append(("SWITCHBACK_SERIAL", String(serial))) }
        if let accepted = record.acceptedSerial { fields.append(("SWITCHBACK_ACCEPTED_SERIAL", String(accepted))) }
        if let url = record.url { fields.append(("SWITCHBACK_URL", url)) }
        fields.append(("SWITCHBACK_STATE_DIR", directory.path))
        return JournalEntry(kind: kind, message: record.reason ?? "The remote directive was refused.", fields: fields)
    }

    /// Rewrites the install's metrics file when the manifest names a textfile directory:
    /// a temporary file in that directory, then `rename(2)`, so the collector reads the old
    /// file or the new one, never half. The file is mode 0644 whatever the umask (the
    /// collector runs as another user). A metrics directory another user could write (or one
    /// below such a directory, or a link) is refused like a state directory: nothing is written. A file that cannot be written is said on stderr in
    /// one sentence (`Warning: ...`) and never fails the event; returns that sentence.
    @discardableResult
    public static func refreshMetrics(in directory: StateDirectory, manifest: Manifest, now: Int64 = currentUnixTime()) -> String? {
        guard let textfileDirectory = manifest.settings[textfileDirectorySetting], !textfileDirectory.isEmpty else { return nil }
        let install: String
        let bucket: Int
        do {
            let store = RemoteStore(directory: directory)
            install = try store.installID()
            bucket = RolloutBucket.bucket(sha256: try FileDigest.sha256(of: RolloutBucket.hashInput(installID: install, appID: manifest.appID),
                                                                       what: store.installIDPath))
        } catch {
            return warnOnce("Warning: the metrics file was not written: the install's id is needed for its name and labels, and \(error.clause). The switch itself is done.")
        }
        let snapshot = snapshot(of: directory, manifest: manifest, now: now, install: install, bucket: bucket)
        let name = fileName(appID: manifest.appID, install: snapshot.install)
        let path = textfileDirectory + "/" + name
        do {
            try FileSystem.replace(path, with: Array(snapshot.render().utf8), mode: 0o644, exactMode: true, durable: false,
                                   what: "metrics directory")
            // The file an earlier version wrote under the state directory's hash: its series
            // would stay beside these for ever with another install label.
            let legacy = fileName(appID: manifest.appID, install: legacyInstallLabel(for: directory))
            if legacy != name, let folder = try? FileSystem.directory(textfileDirectory, what: "metrics directory") {
                try? FileSystem.layer { () throws(FileError) in try folder.remove(legacy) }
            }
            return nil
        } catch {
            return warnOnce(error.code == .insecurePermissions
                ? "Warning: the metrics file \(path) was not written: \(error.clause). The switch itself is done."
                : "Warning: the metrics file \(path) could not be written (\(error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message)); create \(textfileDirectory) or rebuild the bundle with scripts/bundle --metrics-dir DIR. The switch itself is done.")
        }
    }

    /// Says `warning` on stderr the first time in this process (a sync that applies a
    /// directive writes twice); returns it.
    private static func warnOnce(_ warning: String) -> String {
        if !hasWarned {
            hasWarned = true
            var line = warning + "\n"
            _ = line.withUTF8 { write(2, $0.baseAddress, $0.count) }
        }
        return warning
    }

    /// `switchback-<app id>-<install>.prom`: several installs share one collector directory.
    public static func fileName(appID: String, install: String) -> String {
        let safe = String(appID.unicodeScalars.map { scalar -> Character in
            let ok = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || (scalar >= "0" && scalar <= "9")
                || scalar == "." || scalar == "-" || scalar == "_"
            return ok ? Character(scalar) : "_"
        })
        return "switchback-\(safe)-\(install).prom"
    }

    /// The `install` label versions before the install id wrote: FNV-1a 64 of the state
    /// directory's path, in hex (the same on every host with the same layout). Only to remove
    /// the file such a version left.
    public static func legacyInstallLabel(for directory: StateDirectory) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in directory.path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The metrics of the install: the state, health, remote record, counts and marker.
    /// `install` is the install id, `bucket` its rollout bucket for the app.
    public static func snapshot(of directory: StateDirectory, manifest: Manifest, now: Int64, install: String, bucket: Int) -> MetricsSnapshot {
        let state = StateStore(directory: directory).load().state
        let health = HealthStore(directory: directory).load().record
        func slot(_ slot: BuildSlot) -> MetricsSnapshot.Slot {
            let verdict: String
            let known = health.health(of: slot, in: manifest)
            switch known.verdict {
            case .good: verdict = "good"
            case .bad: verdict = "bad"
            case .trial: verdict = "trial"
            }
            return MetricsSnapshot.Slot(version: manifest[slot].version, build: manifest[slot].build, health: verdict,
                                        unmarkedStarts: known.failedStarts)
        }
        let counts = EventCounts.load(from: directory)
            ?? EventCounts(events: (try? HistoryLog(path: directory.historyPath).read().events) ?? [])
        let settings = manifest.remote
        let (record, _) = RemoteStore(directory: directory).load()
        var remote: MetricsSnapshot.Remote?
        if settings.url != nil || record.lastAttemptAt != nil {
            remote = MetricsSnapshot.Remote(
                acceptedSerial: record.acceptedSerial, highestSeenSerial: record.highestSeenSerial,
                lastCheckAt: record.lastAttemptAt, lastSuccessAt: record.lastSuccessAt,
                lastVerifiedAt: record.lastVerifiedAt, heldExpiresAt: record.heldExpiresAt,
                outcome: record.outcome, code: record.code, consecutiveFailures: record.consecutiveFailures ?? 0,
                isStale: record.staleness(now: now, maxStalenessSeconds: settings.maxStalenessSeconds) != nil,
                maxStalenessSeconds: settings.maxStalenessSeconds,
                nextCheckAt: RemoteSchedule.markerTime(in: directory).map { $0 / 1000 })
        }
        return MetricsSnapshot(
            appID: manifest.appID, install: install, rolloutBucket: bucket, stateDirectory: directory.path,
            current: slot(.current), previous: slot(.previous), activeSlot: plannedSlot(directory: directory, manifest: manifest) ?? state.slot,
            source: state.source == .default ? "none" : state.source.rawValue, rollback: state.rollback,
            remote: remote, counts: counts, writtenAt: now, hasAnalysis: Supervisor.Analyzer.isConfigured(manifest),
            probation: Supervisor.Analyzer.isConfigured(manifest) ? (try? ProbationRecord.load(in: directory)) ?? nil : nil,
            hooks: hookMetrics(directory: directory, manifest: manifest))
    }

    /// The hooks' counts, when the manifest configures hooks.
    static func hookMetrics(directory: StateDirectory, manifest: Manifest) -> MetricsSnapshot.Hooks? {
        guard HookSettings.areConfigured(manifest.settings) else { return nil }
        let status = HookStatus.load(in: directory)
        let queue = HookQueue(directory: directory)
        return MetricsSnapshot.Hooks(delivered: status.delivered, failed: status.failed, dropped: queue.dropped, queued: queue.pending().count)
    }

    /// The slot the next start runs, as the launcher's planner decides it from what is on
    /// disk (`InstallOnDisk`, which `rollbackctl status` asks too): a fallback, an untrusted
    /// state, data that cannot go back or a forced slot make it differ from the flag. Nil
    /// outside a bundle (a library's tests) or when the planner cannot decide.
    static func plannedSlot(directory: StateDirectory, manifest: Manifest) -> BuildSlot? {
        guard let root = Launcher.bundleRoot() else { return nil }
        let install = InstallOnDisk(manifest: manifest, directory: directory, bundleRoot: root,
                                    forcedSlot: environmentValue("SWITCHBACK_SLOT"))
        return (try? install.planner.plan())?.decision.slot
    }

    /// N from "... (directive serial N)" or "... directive serial N ...".
    static func directiveSerial(in text: String) -> UInt64? {
        let marker = Array("directive serial ".utf8)
        let bytes = Array(text.utf8)
        var found: UInt64?
        var index = 0
        while index + marker.count <= bytes.count {
            if bytes[index..<(index + marker.count)].elementsEqual(marker) {
                let digits = bytes[(index + marker.count)...].prefix { $0 >= 0x30 && $0 <= 0x39 }
                if let value = UInt64(String(decoding: digits, as: UTF8.self)) { found = value }
                index += marker.count
            } else {
                index += 1
            }
        }
        return found
    }

    /// The manifest of the bundle the running executable belongs to (`<bundle>/bin/<exe>`).
    static func bundleManifest() -> Manifest? {
        guard let root = Launcher.bundleRoot() else { return nil }
        return try? Manifest.load(bundleRoot: root)
    }
}

extension String {
    func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }
}
