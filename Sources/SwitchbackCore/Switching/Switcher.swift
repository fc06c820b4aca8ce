#if canImport(Glibc)
import Glibc
#endif

/// Every switch of the flag goes through here: `rollbackctl rollback`, `rollforward` and
/// `mark-bad`, an applied remote directive, the launcher's automatic rollback and the
/// supervisor's. A switch to the previous slot, in order:
/// 1. checks the previous slot (size, SHA-256, ABI stamp): nothing is converted for a build
///    that cannot run;
/// 2. journals the switch (`SwitchJournal`, durable) — a failure here changes nothing;
/// 3. has the current build convert the data back (`DataDowngrade`);
/// 4. writes the flag and removes the journal in one locked step.
/// A failure or a kill between 3 and 4 is finished or undone by the next `recover()`.
public struct Switcher: Sendable {
    /// The current build's conversion of the data back (step 3); it holds the bundle, its
    /// manifest and the state directory the switch works in.
    let downgrade: DataDowngrade
    public var bundleRoot: String { downgrade.bundleRoot }
    public var manifest: Manifest { downgrade.manifest }
    public var directory: StateDirectory { downgrade.directory }

    public init(bundleRoot: String, manifest: Manifest, directory: StateDirectory) {
        downgrade = DataDowngrade(bundleRoot: bundleRoot, manifest: manifest, directory: directory)
    }

    /// What a switch came to.
    public struct Result: Sendable {
        /// The data conversion, for a switch to the previous slot.
        public var downgrade: DataDowngrade.Outcome?
        /// What the flag write did; nil when the switch was refused.
        public var switched: SwitchOutcome?
        /// Why nothing switched: one sentence that says what to do.
        public var refusal: String?
        /// A note the caller prints as a warning (a forced switch whose data stays as it is).
        public var warning: String?
        /// A note the caller prints as one (a stale supervisor record it ignored).
        public var note: String?
    }

    /// Switches the flag to `rollback` (true: the previous slot). `command` is what the user
    /// would run, for the advice in a refusal. Throws when the switch could not be recorded
    /// (the journal or the flag could not be written), with a sentence that says what was
    /// and was not changed.
    ///
    /// A switch to the previous slot whose data must be converted back while a supervisor of
    /// this bundle serves a child is handed to that supervisor (`handOff`), unless `handsOff`
    /// is false (the supervisor itself, a start).
    public func perform(rollback: Bool, source: ChoiceSource, reason: String?, force: Bool = false,
                        command: String = "rollbackctl rollback", handsOff: Bool = true) throws(SwitchbackError) -> Result {
        guard rollback else {
            let outcome = try StateStore(directory: directory).setRollback(false, source: source, reason: reason, manifest: manifest)
            return Result(switched: outcome)
        }
        if manifest.isFirstRelease {
            return Result(refusal: "This bundle is a first release: both slots hold the same build (\(manifest.current.version)), so there is nothing to roll back to; ship a fix, or bundle the next release with this one pinned as PreviousVersion. The flag is unchanged.")
        }
        if let problem = previousSlotProblem() {
            return Result(refusal: "\(problem) Nothing was converted and the flag is unchanged: a rollback needs a previous build that can run.")
        }
        var note: String?
        if handsOff {
            switch try handOff(source: source, reason: reason, force: force, command: command) {
            case .handled(let result): return result
            case .notHanded(let stale): note = stale
            }
        }
        let journal = SwitchJournal(source: source, reason: reason, force: force,
                                    startedAt: currentUnixTime(), fromBuild: manifest.current.sha256)
        do {
            // Under the lock: a writer that cannot take it (another process holds it) stops
            // here, before any data is converted.
            try directory.prepare()
            try FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
                try FileSystem.replace(SwitchJournal.path(in: directory), with: journal.serialized())
            }
        } catch {
            if error.code == .lockFailed || error.code == .insecurePermissions { throw error }
            throw SwitchbackError(error.code, "Could not record the switch in \(directory.path) (\(error.clause)); nothing was changed: free space or make the directory writable, then retry.", path: error.path, errno: error.errno)
        }
        var result = try convertAndCommit(journal, command: command)
        result.note = note
        return result
    }

    /// Finishes or undoes a switch that was interrupted between the data and the flag (see
    /// `SwitchJournal`), recording which in the history. Returns a sentence saying what it
    /// did, or nil when there was nothing to do. Never throws: a journal that cannot be
    /// resolved now stays for the next try, and the sentence says so.
    public func recover() -> String? {
        guard let loaded = SwitchJournal.load(in: directory) else { return nil }
        let path = SwitchJournal.path(in: directory)
        let journal: SwitchJournal
        switch loaded {
        case .failure(let error):
            try? FileSystem.remove(path)
            recordRecovery("removed a damaged switch journal (\(error.message)); the flag stays as it is", source: .auto)
            return "\(error.message) It was removed; the flag stays as it is."
        case .success(let value):
            journal = value
        }
        let what = "the interrupted switch to the previous slot (\(journal.source.rawValue)\(journal.reason.map { ": \($0)" } ?? ""))"
        if journal.fromBuild != manifest.current.sha256 {
            try? FileSystem.remove(path)
            recordRecovery("dropped \(what): the bundle changed since", source: journal.source)
            return "Dropped \(what): another bundle is installed since."
        }
        do {
            let result = try convertAndCommit(journal, command: "rollbackctl rollback", recovering: true)
            if let refusal = result.refusal {
                return "Undid \(what): \(refusal)"
            }
            return "Finished \(what): the next start runs the previous slot (\(manifest.previous.version))."
        } catch {
            return "Could not finish \(what) yet: \(error.message)"
        }
    }

    // MARK: - Steps

    /// Why the previous slot cannot run, checked without loading it: the file (size,
    /// SHA-256, strict modes) and the ABI stamp the manifest records.
    public func previousSlotProblem() -> String? {
        let verifier = SlotVerifier(bundleRoot: bundleRoot, manifest: manifest, cache: VerifiedCache(path: directory.verifiedCachePath))
        do { _ = try verifier.verify(.previous) } catch { return error.message }
        let stamp = manifest.previous.abiStamp
        guard let parsed = ABIStamp(stamp) else {
            return "The previous slot's ABI stamp in the manifest (\(stamp.prefix(80))) is not one; rebuild the bundle with scripts/bundle."
        }
        if let why = parsed.incompatibility() { return "The previous slot \(why)." }
        return nil
    }

    private func convertAndCommit(_ journal: SwitchJournal, command: String, recovering: Bool = false) throws(SwitchbackError) -> Result {
        let path = SwitchJournal.path(in: directory)
        let outcome = downgrade.run(force: journal.force, source: journal.source, reason: journal.reason)
        var warning: String?
        switch outcome.status {
        case .done:
            break
        case .unavailable where journal.force:
            warning = "\(downgrade.refusal(outcome, command: command)) Switching anyway (--force); the data is left as it is."
        default:
            let refusal = downgrade.refusal(outcome, command: command)
            try? FileSystem.remove(path)
            if recovering { recordRecovery("undid the interrupted switch to the previous slot: \(refusal)", source: journal.source) }
            return Result(downgrade: outcome, refusal: refusal)
        }
        let store = StateStore(directory: directory)
        let switched: SwitchOutcome
        do {
            switched = try FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) -> SwitchOutcome in
                let outcome = try store.setRollbackLocked(true, source: journal.source, reason: journal.reason, manifest: manifest,
                                                          now: currentUnixTime())
                if recovering {
                    let note = "finished the interrupted switch to the previous slot; the data had been converted, the flag had not been written"
                    try HistoryLog(path: directory.historyPath).append(SwitchHistoryEvent(time: currentUnixTime(), kind: .recovery, from: .current, to: .previous, source: journal.source, reason: note))
                }
                try? FileSystem.remove(path)
                return outcome
            }
        } catch {
            throw SwitchbackError(error.code, "The data was converted for \(manifest.previous.version), but the flag could not be written (\(error.clause)); the switch stays journalled in \(path), and the next rollbackctl command or start finishes it once the state directory is writable.", path: error.path, errno: error.errno)
        }
        return Result(downgrade: outcome, switched: switched, warning: warning)
    }

    private func recordRecovery(_ note: String, source: ChoiceSource) {
        let event = SwitchHistoryEvent(time: currentUnixTime(), kind: .recovery, from: .current, to: .current, source: source, reason: note)
        try? FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            try HistoryLog(path: directory.historyPath).append(event)
        }
    }
}
