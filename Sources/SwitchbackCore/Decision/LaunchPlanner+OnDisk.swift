/// The planner of the next start of an install, from what is on disk now, read the way the
/// launcher reads it: the state and health through `StartState` (an untrusted directory
/// decides only through a rejection it records), each slot's checks before mapping (with the
/// verified cache when the directory is trusted), the data's reader floor, and a switch interrupted between the data and the
/// flag (`switch.pending`), which the next start finishes before it plans (`Switcher.recover`),
/// so the plan is made from the flag that switch writes. `rollbackctl status` names the slot it
/// plans, and the metrics' `switchback_active_slot` exports the same one, so the two cannot
/// disagree (docs/design.md, "Who decides what").
public struct InstallOnDisk {
    public let read: StartState
    /// Why each slot cannot run, nil when it can.
    public let slotProblems: [BuildSlot: String]
    /// The interrupted switch the next start finishes before it runs anything, if any (one
    /// for this bundle's current build, in a trusted directory), and whether it finishes it
    /// (`SwitchJournal.finishes`) or undoes it, leaving the flag as it is.
    public let pendingSwitch: (journal: SwitchJournal, finishes: Bool)?
    public let planner: LaunchPlanner

    public init(manifest: Manifest, directory: StateDirectory, bundleRoot: String, forcedSlot: String?) {
        var directoryProblem: SwitchbackError?
        do { try directory.checkPermissions() } catch { directoryProblem = error }
        let read = StartState.load(directory: directory, directoryProblem: directoryProblem, manifest: manifest)
        // The verified cache only in a trusted directory, as the launcher: an entry another
        // user planted would pass a slot the start hashes and refuses.
        let verifier = SlotVerifier(bundleRoot: bundleRoot, manifest: manifest,
                                    cache: read.isTrusted ? VerifiedCache(path: directory.verifiedCachePath) : nil)
        var problems: [BuildSlot: String] = [:]
        for slot in BuildSlot.allCases {
            do { _ = try verifier.verify(slot) } catch { problems[slot] = error.message }
        }
        let trusted = read.isTrusted
        var loaded = read.loaded
        var pending: (journal: SwitchJournal, finishes: Bool)?
        // The start converts, and stays on the current build when the data has no way back:
        // the plan the current build published says so.
        let conversionRefusal = { () -> String? in
            guard let data = DataState.load(in: directory, for: manifest), data.plan == .refused else { return nil }
            return DataDowngrade.refusal(.init(status: .refused, message: data.detail ?? "the current build published no way back"),
                                         command: "rollbackctl rollback", manifest: manifest)
        }
        if trusted, case .success(let journal)? = SwitchJournal.load(in: directory), journal.fromBuild == manifest.current.sha256 {
            let finishes = journal.finishes(currentSlotProblem: problems[.current], conversionRefused: conversionRefusal() != nil)
            pending = (journal, finishes)
        }
        var health = read.health
        if let (journal, finishes) = pending, finishes {
            // The switch that start finishes writes the flag and its verdicts (`StateStore.setRollback`).
            health.recordSwitch(rollback: true, source: journal.source, reason: journal.reason,
                                flagChanges: loaded.switchChangesFlag(rollback: true, from: BuildIdentity(manifest, .current)),
                                manifest: manifest, now: currentUnixTime())
            loaded.state = PersistedState(rollback: true, source: journal.source, reason: journal.reason,
                                          changedAt: journal.startedAt, fromBuild: BuildIdentity(manifest, .current),
                                          toBuild: BuildIdentity(manifest, .previous))
            loaded.isFirstStart = false  // the switch writes the state file
            loaded.problem = nil
            loaded.recoveredFromHistory = false
        }
        self.read = read
        slotProblems = problems
        pendingSwitch = pending
        planner = LaunchPlanner(manifest: manifest, state: loaded, isTrusted: trusted, health: health,
                                healthProblem: read.healthProblem, forcedSlot: forcedSlot,
                                slotProblem: { problems[$0] },
                                // Finishing a pending switch converts the data first, as a
                                // start does; if it cannot, the switch is undone (below).
                                dataFloor: { Launcher.dataFloor(manifest: manifest, directory: directory, trusted: trusted) },
                                conversionRefusal: conversionRefusal)
    }
}
