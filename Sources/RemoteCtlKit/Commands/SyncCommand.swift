#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RollbackCtlKit
import SwitchbackCore
import SwitchbackRemote

/// `sync [--url URL]`: fetch, verify and apply the remote directive, and keep the outcome in
/// the state directory for `status`.
///
/// Guarantees: one sync at a time per state directory (`sync.lock`; a background sync that
/// finds it held exits at once); the fetch ends within the deadline; only an applied
/// directive changes the rollback flag, through `StateStore.setRollback` (source `remote`),
/// so a refused or unreachable directive never changes the decision; every outcome is
/// written to `remote` atomically under the state lock.
struct SyncCommand: Command {
    static let configuration = CommandConfiguration.sync

    let workspace: Workspace
    let url: String?
    let deadlineMilliseconds: Int?
    let background: Bool
    /// Set by the launcher for a first check: the end of its window (RemoteSchedule).
    let firstCheckWindowEnd: Int64?

    init(_ parsed: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        workspace = try context.workspace()
        url = parsed.options["--url"]
        background = parsed.flags.contains("--background")
        if let text = parsed.options["--deadline-ms"] {
            guard let value = Int(text), value > 0 else {
                throw .usage("'--deadline-ms' must be a positive whole number, not '\(text)'.", subcommand: "sync")
            }
            deadlineMilliseconds = value
        } else {
            deadlineMilliseconds = nil
        }
        if let text = parsed.options["--window-end"] {
            guard let value = Int64(text), value >= 0 else {
                throw .usage("'--window-end' must be a time in milliseconds since the epoch, not '\(text)'.", subcommand: "sync")
            }
            firstCheckWindowEnd = value
        } else {
            firstCheckWindowEnd = nil
        }
        if let url, URL(string: url)?.scheme == nil {
            throw .usage("'\(url)' is not a URL (such as https://example.com/directive.json).", subcommand: "sync")
        }
    }

    func run(_ console: Console) throws(CommandError) {
        let manifest = workspace.manifest
        let settings = manifest.remote
        guard let text = url ?? settings.url, let url = URL(string: text) else {
            throw .failure("No directive URL: pass --url URL, or build the bundle with scripts/bundle --directive-url URL.")
        }
        guard !settings.keys.isEmpty else {
            throw .failure("The manifest trusts no directive key, so no directive can be verified; build the bundle with scripts/bundle --trust-key FILE.")
        }
        let trust: TrustConfig
        do { trust = try TrustConfig(appID: manifest.appID, trustedKeyPEMs: settings.keyPEMs) } catch {
            throw .failure("The manifest's remote.keys: \(error)")
        }
        try workspace.checkTrusted()
        let directory = workspace.directory
        let lock: FileLock?
        do {
            try directory.prepare()
            lock = try FileLock.acquire(path: RemoteCheckTrigger.syncLockPath(in: directory), wait: !background)
        } catch {
            throw .failure(error.message)
        }
        guard let lock else { return }  // another sync is running; this background one is not needed
        defer { withExtendedLifetime(lock) {} }
        RemoteCheckTrigger.touchMarker(in: directory)

        let store = RemoteStore(directory: directory)
        let record = store.load().record
        let installID: String
        do { installID = try store.installID() } catch { throw .failure(error.message) }
        let context = InstallContext(currentVersion: manifest.current.version, installID: installID,
                                     lastAcceptedSerial: record.acceptedSerial, highestSeenSerial: record.highestSeenSerial)
        // A 304 is never followed by another, nor sent when freshness is half-way to stale:
        // every change is seen within two checks whatever the server's validators.
        let conditional = record.mayUseValidators(now: currentUnixTime(), maxStalenessSeconds: settings.maxStalenessSeconds)
            ? ConditionalHeaders(etag: record.etag, lastModified: record.lastModified,
                                 url: record.validatorsURL, currentVersion: record.validatorsVersion)
            : .none
        let options = FetchOptions(deadline: .milliseconds(deadlineMilliseconds ?? settings.deadlineMilliseconds),
                                   allowInsecureHTTP: settings.allowsInsecureHTTP)
        // A file:// source is read, not fetched; the verification is the same. `fileVersion` is
        // the version read, recorded once the outcome is, so that starts and the supervisor
        // read the file again only when it changes.
        let result: SyncResult
        var fileVersion: String?
        if let path = DirectiveFile.path(ofURL: text) {
            (result, fileVersion) = Self.readFile(path, url: text, trust: trust, context: context, limit: options.maxBodyBytes)
        } else {
            result = runBlocking {
                await SwitchbackRemote.sync(url: url, trust: trust, context: context, conditional: conditional, options: options)
            }
        }

        // Apply first, then record: if this process dies in between, the next sync finds the
        // same serial still above the accepted one and applies it again, changing nothing.
        var applied: (directive: Directive, outcome: SwitchOutcome)?
        var applyFailure: String?
        var applyFailureCode = CommandError.Code.stateNotWritable
        if let directive = result.outcome.appliedDirective {
            do {
                let reason = "\(directive.reason) (directive serial \(directive.serial))"
                // The data first: a refusal leaves the serial unaccepted, so the next sync tries again.
                let outcome = try workspace.switchFlag(rollback: directive.decision == .runPrevious, source: .remote, reason: reason,
                                                       background ? .silent : console)
                applied = (directive, outcome)
            } catch {
                applyFailure = "Directive serial \(directive.serial) is authentic but was not applied: \(error.message)"
                // The command's own code (`switch_refused` when the data cannot go back,
                // `state_not_writable`, ...): both leave the serial unaccepted.
                applyFailureCode = error.code
            }
        }
        var becameStale: RemoteStaleness?
        do {
            try store.update { (record: inout RemoteRecord) throws(SwitchbackError) in
                let now = Int64(result.checkedAt.timeIntervalSince1970)
                record.url = result.url
                if record.firstAttemptAt == nil { record.firstAttemptAt = now }
                record.lastAttemptAt = now
                // Freshness and replay memory come from what verified, whether or not it applied.
                if let authentic = result.authentic {
                    record.highestSeenSerial = max(record.highestSeenSerial ?? 0, authentic.serial)
                    if result.provesFreshness {
                        record.lastVerifiedAt = now
                        record.heldExpiresAt = authentic.expiresAt
                    }
                }
                let succeeded = applyFailure == nil && result.isSuccessfulCheck
                record.consecutiveFailures = succeeded ? 0 : (record.consecutiveFailures ?? 0) + 1
                becameStale = Self.recordStaleness(in: &record, now: now, settings: settings, workspace: workspace)
                if let applyFailure {
                    record.outcome = "not_applied"
                    record.code = applyFailureCode.rawValue
                    record.reason = applyFailure
                    return
                }
                if result.isSuccessfulCheck { record.lastSuccessAt = now }
                record.outcome = result.outcome.kind
                record.code = result.outcome.code
                record.reason = result.description
                if let applied { record.acceptedSerial = applied.directive.serial }
                record.etag = result.conditional.etag
                record.lastModified = result.conditional.lastModified
                record.validatorsURL = result.conditional.url
                record.validatorsVersion = result.conditional.currentVersion
            }
        } catch {
            throw .failure("The check's outcome could not be recorded: \(error.message)")
        }
        // The next check's due time (docs/remote.md, "Scheduling") and the exported metrics.
        RemoteSchedule.recordAttempt(in: directory, manifest: manifest, failed: applyFailure != nil || !result.isSuccessfulCheck,
                                     consecutiveFailures: store.load().record.consecutiveFailures,
                                     firstCheckWindowEnd: firstCheckWindowEnd)

        if let fileVersion { try? DirectiveFile.recordSeen(fileVersion, in: directory) }

        if let becameStale, !background { console.error("Warning: \(becameStale.description)") }
        if let applyFailure { throw .failure(applyFailure) }
        guard result.isSuccessfulCheck else { throw .failure(result.description) }
        guard !background else { return }
        console.out(result.description)
        if let (directive, outcome) = applied {
            let slot: BuildSlot = directive.decision == .runPrevious ? .previous : .current
            let version = manifest[slot].version
            console.out(outcome.changed
                ? "The next start runs the \(slot.rawValue) slot (\(version))."
                : "The \(slot.rawValue) slot (\(version)) was already selected; nothing changed.")
        }
    }

    /// Reads the directive file at `path` strictly (`DirectiveFile.read`: the checks of any
    /// file Switchback trusts) and judges it as an HTTP answer would be. Returns the result
    /// and the version of the file it stands for. A file another user could have written is
    /// refused (`untrusted_file`), a missing or unreadable one is unreachable (`file_unreadable`).
    static func readFile(_ path: String, url: String, trust: TrustConfig, context: InstallContext,
                         limit: Int) -> (SyncResult, String) {
        func failed(_ outcome: SyncOutcome) -> (SyncResult, String) {
            (SyncResult(outcome: outcome, url: url, checkedAt: Date(timeIntervalSince1970: context.now.timeIntervalSince1970.rounded(.down)),
                        conditional: .none), DirectiveFile.fingerprint(of: path, for: context.currentVersion))
        }
        do {
            guard let (bytes, version) = try DirectiveFile.read(path, for: context.currentVersion, limit: limit) else {
                return failed(.unreachable(.fileUnreadable, reason: "The directive file \(path) does not exist; the decision stays until a directive is published there."))
            }
            return (SwitchbackRemote.judge(directiveBytes: Data(bytes), url: url, trust: trust, context: context), version)
        } catch {
            if error.code == .insecurePermissions { return failed(.refused(.untrustedFile, reason: error.message)) }
            return failed(.unreachable(.fileUnreadable, reason: "\(error.message) The decision stays."))
        }
    }

    /// Writes one `remote_stale` history event when the install has just become stale (once
    /// per episode: `staleReportedSince` remembers it until the install is fresh again), and
    /// returns the staleness when it did. Called under the state lock, with the record updated.
    /// A history that cannot be written does not cost the check's record: the event is tried
    /// again at the next sync.
    static func recordStaleness(in record: inout RemoteRecord, now: Int64, settings: RemoteSettings,
                                workspace: Workspace) -> RemoteStaleness? {
        guard let staleness = record.staleness(now: now, maxStalenessSeconds: settings.maxStalenessSeconds) else {
            record.staleReportedSince = nil
            return nil
        }
        guard record.staleReportedSince == nil else { return nil }
        let slot: BuildSlot = workspace.store.load().state.rollback ? .previous : .current
        do {
            try HistoryLog(path: workspace.directory.historyPath).append(
                SwitchHistoryEvent(time: now, kind: .remoteStale, from: slot, to: slot, source: .remote, reason: staleness.description))
        } catch {
            return staleness
        }
        record.staleReportedSince = staleness.since
        return staleness
    }
}
