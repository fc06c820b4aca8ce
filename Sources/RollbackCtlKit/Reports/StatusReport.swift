#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract
import SwitchbackCore

/// What `status` says, as one value rendered both for people and as JSON.
struct StatusReport {
    /// The slot the next start runs, after any fallback the launcher would make (the
    /// launcher's own plan, `LaunchPlanner`); when the start is refused, the slot it chose.
    var activeSlot: BuildSlot
    /// Why the next start is refused (the launcher's sentence, exit 70); nil when it runs.
    var refusal: String?
    /// The plan's reason code ("rolled-back", "fallback", "no-slot-runs", ...).
    var reasonCode: String
    /// One sentence: which slot and why, or that the start is refused and why.
    var sentence: String
    var state: PersistedState
    var stateProblem: String?
    /// Why the state cannot be trusted (`StartState`), one sentence; nil when it can.
    var untrustedBecause: String?
    var slots: [BuildSlot: (record: Manifest.SlotRecord, problem: String?)]
    var health: [BuildSlot: SlotHealth]
    var stateDirectory: String
    var supervisor: SupervisorRecord?
    var bundleRoot: String
    var appID: String
    /// The remote directive: the manifest's settings and the last checks' record.
    var remoteSettings: RemoteSettings
    var remote: RemoteRecord?
    var remoteProblem: String?
    /// Whether the install's view of the remote directive is stale now (RemoteRecord.staleness).
    var remoteStaleness: RemoteStaleness?
    /// What the current build last published about its data (nil: nothing yet).
    var data: DataState?
    /// Why the published data state was ignored (another build or app published it).
    var dataIgnored: String?
    /// Whether the current build manages its data with Switchback (exports the downgrade
    /// entry point, as every SDK app does); nil for manifests from before this was recorded.
    var currentManagesData: Bool?
    /// Both slots hold the same build (`--first-release`): rollbacks are refused.
    var isFirstRelease: Bool
    /// The newest restore or archive in the history: where newer data was put aside.
    var lastArchive: SwitchHistoryEvent?
    var previousVersion: String
    /// The loud line the launcher prints at every start (an explicit choice that keeps
    /// failing, both builds bad), if any.
    var warning: String?
    /// Why the launcher could not record a start now (read-only or full state directory).
    var writeProblem: String?
    /// A switch was interrupted between the data and the flag; the next command finishes it.
    var pendingSwitch: Bool
    /// What the next start does with it (`InstallOnDisk.pendingSwitch`): the sentence status prints.
    var pendingSwitchLine: String?
    /// The last probation the supervisor recorded (nil: none, or the manifest configures no analysis).
    var probation: ProbationRecord?
    /// Why the probation record was ignored (damaged).
    var probationProblem: String?
    /// The hooks, when the manifest configures them.
    var hooks: StatusDocument.Hooks?

    /// Why a start could not record its try now: a read-only file system or no free space.
    /// Wraps `statvfs(3)` and `access(2)`; a directory that does not exist yet is fine.
    static func writeProblem(_ directory: StateDirectory) -> String? {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { return nil }
        let fix = "starts cannot record their tries, so automatic rollback cannot happen"
        if info.f_flag & UInt(ST_RDONLY) != 0 {
            return "The state directory \(directory.path) is on a read-only file system: \(fix); remount it read-write."
        }
        if access(directory.path, W_OK) != 0 {
            return "The state directory \(directory.path) is not writable: \(fix); fix its permissions."
        }
        if info.f_bavail == 0 || info.f_favail == 0 {
            return "The file system of the state directory \(directory.path) is full: \(fix); free some space."
        }
        return nil
    }

    /// Makes the report the way the launcher decides: the persisted choice (or
    /// SWITCHBACK_SLOT), then the file checks that would make it fall back.
    init(workspace: Workspace) throws(CommandError) {
        // What the launcher reads, by the same rules: an untrusted state decides only through
        // a rejection it records, and its verdicts count for nothing.
        let install = InstallOnDisk(manifest: workspace.manifest, directory: workspace.directory,
                                    bundleRoot: workspace.bundleRoot, forcedSlot: environmentValue("SWITCHBACK_SLOT"))
        let read = install.read
        let loaded = read.loaded
        let healthRecord = read.health
        untrustedBecause = read.trustProblem?.message
        var health: [BuildSlot: SlotHealth] = [:]
        for slot in BuildSlot.allCases { health[slot] = workspace.health(of: slot, in: healthRecord) }
        self.health = health
        writeProblem = Self.writeProblem(workspace.directory)
        pendingSwitch = SwitchJournal.exists(in: workspace.directory)
        if pendingSwitch {
            switch install.pendingSwitch {
            case (_, true)?:
                pendingSwitchLine = "A switch to the previous slot was interrupted between the data and the flag; the next rollbackctl command or start finishes it: the slot above is the one it runs then."
            case (_, false)?:
                pendingSwitchLine = "A switch to the previous slot was interrupted between the data and the flag; the next rollbackctl command or start undoes it, because the data cannot be converted back now, and the flag stays as it is: the slot above is the one it runs then."
            case nil:
                pendingSwitchLine = "A switch journal that is damaged or another bundle's is in the state directory; the next rollbackctl command or start removes it, and the flag stays as it is."
            }
        }
        var slots: [BuildSlot: (Manifest.SlotRecord, String?)] = [:]
        for slot in BuildSlot.allCases { slots[slot] = (workspace.manifest[slot], install.slotProblems[slot]) }
        // The launcher's planner, from the same inputs: what it runs is what status names.
        let manifest = workspace.manifest, planner = install.planner
        let plan: LaunchPlan
        do { plan = try planner.plan() } catch { throw .failure(error.message) }
        warning = plan.health?.message
        activeSlot = plan.decision.slot
        refusal = plan.refusal?.sentence(manifest)
        reasonCode = plan.reason.code
        sentence = plan.sentence(manifest)
        state = loaded.state
        stateProblem = loaded.problemSentence
        self.slots = slots
        stateDirectory = workspace.directory.path
        if case .live(let live) = SupervisorIdentity.check(in: workspace.directory), live.actsFor(bundleRoot: workspace.bundleRoot) {
            supervisor = live.record
        }
        bundleRoot = workspace.bundleRoot
        appID = workspace.manifest.appID
        remoteSettings = workspace.manifest.remote
        let (record, problem) = RemoteStore(directory: workspace.directory).load()
        remote = record == RemoteRecord() && problem == nil ? nil : record
        remoteProblem = problem?.message
        remoteStaleness = remoteSettings.url == nil && remote == nil ? nil
            : record.staleness(now: currentUnixTime(), maxStalenessSeconds: remoteSettings.maxStalenessSeconds)
        let published = DataState.load(in: workspace.directory)
        if let published, let mismatch = published.mismatch(with: workspace.manifest) {
            dataIgnored = "The data state in \(DataState.path(in: workspace.directory)) is ignored: \(mismatch); the current build publishes its own when it starts."
        } else {
            data = published
        }
        currentManagesData = workspace.manifest.settings["current.downgrade"].map { $0 == "true" }
        isFirstRelease = workspace.manifest.isFirstRelease
        lastArchive = (try? workspace.history.read().events)?.last { $0.kind == .restore || $0.kind == .archive }
        previousVersion = workspace.manifest.previous.version
        do { probation = try ProbationRecord.load(in: workspace.directory) } catch { probationProblem = error.message }
        hooks = Self.hooks(workspace)
    }

    /// The hooks' part of the report: their targets, and what the deliverer recorded.
    static func hooks(_ workspace: Workspace) -> StatusDocument.Hooks? {
        let settings = HookSettings.settings(in: workspace.manifest.settings)
        guard settings.values.contains(where: { !$0.isEmpty }) else { return nil }
        let queue = HookQueue(directory: workspace.directory)
        let status = HookStatus.load(in: workspace.directory)
        var document = StatusDocument.Hooks(
            command: nil, url: nil, delivered: status.delivered, failed: status.failed, queued: queue.pending().count,
            dropped: queue.dropped, lastFailure: status.lastFailure, lastFailureAt: status.lastFailureAt.map(formatRFC3339),
            lastDeliveredAt: status.lastDeliveredAt.map(formatRFC3339), problem: nil)
        do {
            let parsed = try HookSettings.parse(settings)
            document.command = parsed?.command
            document.url = parsed?.url
        } catch {
            document.problem = error.message
        }
        return document
    }

    /// "Hooks: ..." lines: where events go, the counts, the last failure.
    var hookLines: [String] {
        guard let hooks else { return [] }
        if let problem = hooks.problem { return ["Hooks: not delivered: \(problem)"] }
        let targets = [hooks.command.map { "command \($0)" }, hooks.url.map { "webhook \($0)" }].compactMap { $0 }.joined(separator: " and ")
        var line = "Hooks: \(targets): \(hooks.delivered) delivered, \(hooks.failed) failed, \(hooks.queued) queued"
        if hooks.dropped > 0 { line += ", \(hooks.dropped) dropped (the queue was full)" }
        var lines = [line + "."]
        if let failure = hooks.lastFailure {
            lines.append("Hooks: last failure (\(hooks.lastFailureAt ?? "at an unknown time")): \(failure).")
        }
        return lines
    }

    /// The data lines: its reader floor, whether a rollback is data-safe now, the last archive.
    var dataLines: [String] {
        var lines: [String] = []
        if let data {
            let published = "published by \(data.publishedBy)\(data.publishedAt.map { " at \(formatUTC($0))" } ?? "")"
            lines.append("Data: reader floor \(data.readerFloor ?? "none") (\(published)).")
            let detail = data.detail.map { ": \($0)" } ?? ""
            lines.append(data.isRollbackDataSafe
                ? "Data: a rollback to \(data.rollbackTo) is data-safe now\(detail)."
                : "Data: a rollback to \(data.rollbackTo) is NOT data-safe now\(detail)\(data.plan == .refused ? "; only --force (which archives the data) can roll back" : "").")
        } else if currentManagesData == false {
            lines.append("Data: the current build does not manage its data with Switchback (it exports no \(SWITCHBACK_DOWNGRADE_SYMBOL)); a rollback leaves the data as it is.")
        } else {
            lines.append("Data: no data state published yet (the current build publishes it when it starts); a rollback to \(previousVersion) converts the data back first if it must.")
        }
        if let dataIgnored { lines.append("Data: \(dataIgnored)") }
        if let lastArchive {
            lines.append("Data: last \(lastArchive.kind.rawValue) on \(formatUTC(lastArchive.time)): \(lastArchive.reason ?? "")")
        }
        return lines
    }

    var dataDocument: StatusDocument.DataStatus {
        StatusDocument.DataStatus(
            published: data != nil, ignored: dataIgnored, managed: currentManagesData, readerFloor: data?.readerFloor,
            publishedBy: data?.publishedBy, publishedAt: data?.publishedAt.map(formatRFC3339),
            rollbackTo: data?.rollbackTo ?? previousVersion, rollbackPlan: data?.plan.rawValue,
            rollbackDataSafe: data?.isRollbackDataSafe, detail: data?.detail,
            lastArchive: lastArchive.map { .init(time: formatRFC3339($0.time), kind: $0.kind.rawValue, reason: $0.reason) })
    }

    /// The remote lines: the last check's outcome, then freshness and the accepted serial.
    var remoteLines: [String] {
        guard remoteSettings.url != nil || remote != nil || remoteProblem != nil else { return [] }
        var lines: [String] = []
        if let problem = remoteProblem { lines.append("Remote: \(problem) The next sync rewrites it.") }
        guard let remote, let attempt = remote.lastAttemptAt else {
            if remoteProblem == nil {
                lines.append("Remote: \(remoteSettings.url ?? "no URL") not checked yet (a start checks when the last check is older than \(remoteSettings.intervalSeconds) s).")
            }
            return lines
        }
        lines.append("Remote: checked \(formatUTC(attempt)): \(remote.reason ?? remote.outcome ?? "no outcome recorded")")
        let success = remote.lastSuccessAt.map(formatUTC) ?? "never"
        let serial = remote.acceptedSerial.map { String($0) } ?? "none"
        lines.append("Remote: last successful check \(success); accepted serial \(serial); \(remote.url ?? remoteSettings.url ?? "")")
        if let remoteStaleness { lines.append("Remote: \(remoteStaleness.description)") }
        return lines
    }

    var remoteDocument: StatusDocument.Remote? {
        guard remoteSettings.url != nil || remote != nil || remoteProblem != nil else { return nil }
        let record = remote ?? RemoteRecord()
        return StatusDocument.Remote(
            intervalSeconds: Int(remoteSettings.intervalSeconds), url: record.url ?? remoteSettings.url,
            lastAttemptAt: record.lastAttemptAt.map(formatRFC3339), lastSuccessAt: record.lastSuccessAt.map(formatRFC3339),
            outcome: record.outcome, code: record.code, reason: record.reason,
            acceptedSerial: record.acceptedSerial, highestSeenSerial: record.highestSeenSerial,
            lastVerifiedAt: record.lastVerifiedAt.map(formatRFC3339), heldExpiresAt: record.heldExpiresAt.map(formatRFC3339),
            consecutiveFailures: record.consecutiveFailures ?? 0, maxStalenessSeconds: Int(remoteSettings.maxStalenessSeconds),
            stale: remoteStaleness != nil, staleCause: remoteStaleness?.cause.rawValue,
            staleSince: remoteStaleness.map { formatRFC3339($0.since) }, staleReason: remoteStaleness?.description,
            recordProblem: remoteProblem)
    }

    var text: String {
        var lines = [sentence]
        if let warning { lines.append(warning) }
        if let writeProblem { lines.append("WARNING: \(writeProblem)") }
        if let pendingSwitchLine { lines.append(pendingSwitchLine) }
        lines.append("Rollback flag: \(state.rollback ? "set" : "clear") (source: \(state.source.rawValue)\(state.changedAt.map { ", since \(formatUTC($0))" } ?? ""))")
        for slot in BuildSlot.allCases {
            guard let (record, problem) = slots[slot] else { continue }
            let build = record.build.isEmpty ? "" : " build \(record.build)"
            let verdict = health[slot].map { ", \($0.summary)" } ?? ""
            // The problem is a whole sentence: it goes after the verdict, not before its comma.
            let checks = problem == nil ? "ok" : "cannot run"
            lines.append("\(slot.rawValue + String(repeating: " ", count: max(0, 9 - slot.rawValue.count))) \(record.version)\(build): \(checks)\(verdict)\(problem.map { ". \($0)" } ?? "")")
        }
        if isFirstRelease {
            lines.append("Previous slot: the same build as the current one (a first release): rollbacks are refused until the next release pins this one.")
        }
        lines.append(contentsOf: dataLines)
        lines.append(contentsOf: remoteLines)
        if let supervisor {
            let child = supervisor.childPID.map { pid in
                let slot = supervisor.childSlot.map { " running the \($0.rawValue) slot" } ?? " starting"
                let uptime = supervisor.childStartedAt.map { " for \(currentUnixTime() - $0) s" } ?? ""
                let ready = supervisor.childReady == false ? " (not ready yet)" : ""
                return "child pid \(pid)\(slot)\(uptime)\(ready)"
            } ?? "no child running (restarting)"
            lines.append("Supervisor: pid \(supervisor.pid), \(child), \(supervisor.restarts) restarts")
            if let pid = supervisor.candidatePID {
                let slot = supervisor.candidateSlot.map { "the \($0.rawValue) slot" } ?? "the new slot"
                lines.append("Switching: \(slot) is starting in pid \(pid); the old child serves until it is ready.")
            }
            if let pause = supervisor.pause {
                lines.append("Switching: \(pause.sentence); paused since \(formatRFC3339(pause.at)), connections wait in the queue.")
            }
            if let failure = supervisor.switchFailure, failure.at >= supervisor.lastSwitch?.at ?? 0 {
                lines.append("Last switch: \(HealthPolicy.capitalized(failure.reason)) (\(formatRFC3339(failure.at))).")
            } else if let last = supervisor.lastSwitch {
                lines.append("Last switch: \(last.sentence) (\(formatRFC3339(last.at))).")
            }
        }
        lines.append(contentsOf: probationLines)
        lines.append(contentsOf: hookLines)
        lines.append("State directory: \(stateDirectory)")
        if let untrustedBecause { lines.append("State: not trusted. \(untrustedBecause)") }
        return lines.joined(separator: "\n")
    }

    static func document(_ health: SlotHealth) -> StatusDocument.Health {
        var document = StatusDocument.Health(
            verdict: "", markedBy: health.markedBy?.rawValue, failedStarts: health.failedStarts, note: health.note,
            lastGoodAt: health.lastGoodAt.map(formatRFC3339), summary: health.summary)
        switch health.verdict {
        case .good: document.verdict = "good"
        case .bad: document.verdict = "bad"
        case .trial(let tries): document.verdict = "trial"; document.triesLeft = tries
        }
        return document
    }

    /// The report as `status --json` prints it.
    var document: StatusDocument {
        var slotDocuments: [String: StatusDocument.Slot] = [:]
        for (slot, entry) in slots {
            slotDocuments[slot.rawValue] = StatusDocument.Slot(
                version: entry.record.version, build: entry.record.build, abi: entry.record.abiStamp,
                sha256: entry.record.sha256, ok: entry.problem == nil, problem: entry.problem,
                health: health[slot].map(Self.document))
        }
        return StatusDocument(
            appID: appID,
            activeSlot: refusal == nil ? activeSlot.rawValue : nil,
            refusal: refusal,
            reasonCode: reasonCode,
            rollback: state.rollback,
            source: state.source.rawValue,
            reason: state.reason,
            changedAt: state.changedAt.map(formatRFC3339),
            explanation: sentence,
            warning: warning,
            writeProblem: writeProblem,
            pendingSwitch: pendingSwitch,
            firstRelease: isFirstRelease,
            fromBuild: state.fromBuild.map { .init(sha256: $0.sha256, version: $0.version) },
            toBuild: state.toBuild.map { .init(sha256: $0.sha256, version: $0.version) },
            stateProblem: stateProblem,
            stateTrust: .init(trusted: untrustedBecause == nil, reason: untrustedBecause),
            slots: slotDocuments,
            stateDirectory: stateDirectory,
            supervisor: supervisor.map { record in
                StatusDocument.Supervisor(
                    pid: record.pid, startedAt: formatRFC3339(record.startedAt), childPID: record.childPID,
                    childSlot: record.childSlot?.rawValue, childUptimeSeconds: record.childStartedAt.map { currentUnixTime() - $0 },
                    restarts: record.restarts, childReady: record.childReady, candidatePID: record.candidatePID,
                    candidateSlot: record.candidateSlot?.rawValue,
                    switchFailure: record.switchFailure.map { .init(slot: $0.slot.rawValue, at: formatRFC3339($0.at), reason: $0.reason) },
                    pause: record.pause.map(Self.document), lastSwitch: record.lastSwitch.map(Self.document))
            },
            bundle: bundleRoot,
            remote: remoteDocument,
            data: dataDocument,
            probation: probationDocument,
            hooks: hooks)
    }

    /// A stop-first switch as `--json` shows it.
    static func document(_ record: SupervisorRecord.LastSwitch) -> StatusDocument.StopFirstSwitch {
        .init(path: record.path, from: record.from.rawValue, to: record.to.rawValue, fromVersion: record.fromVersion,
              toVersion: record.toVersion, why: record.why, pausedMilliseconds: record.pausedMilliseconds, at: formatRFC3339(record.at))
    }
}
