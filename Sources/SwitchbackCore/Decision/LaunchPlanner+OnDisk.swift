/// The planner of the next start of an install, from what is on disk now, read the way the
/// launcher reads it: the state and health through `StartState` (an untrusted directory
/// decides only through a rejection it records), each slot's checks before mapping (with the
/// verified cache), and the data's reader floor. `rollbackctl status` names the slot it
/// plans, and the metrics' `switchback_active_slot` exports the same one, so the two cannot
/// disagree (docs/design.md, "Who decides what").
public struct InstallOnDisk {
    public let read: StartState
    /// Why each slot cannot run, nil when it can.
    public let slotProblems: [BuildSlot: String]
    public let planner: LaunchPlanner

    public init(manifest: Manifest, directory: StateDirectory, bundleRoot: String, forcedSlot: String?) {
        var directoryProblem: SwitchbackError?
        do { try directory.checkPermissions() } catch { directoryProblem = error }
        let read = StartState.load(directory: directory, directoryProblem: directoryProblem, manifest: manifest)
        let verifier = SlotVerifier(bundleRoot: bundleRoot, manifest: manifest, cache: VerifiedCache(path: directory.verifiedCachePath))
        var problems: [BuildSlot: String] = [:]
        for slot in BuildSlot.allCases {
            do { _ = try verifier.verify(slot) } catch { problems[slot] = error.message }
        }
        let trusted = read.isTrusted
        self.read = read
        slotProblems = problems
        planner = LaunchPlanner(manifest: manifest, state: read.loaded, isTrusted: trusted, health: read.health,
                                healthProblem: read.healthProblem, forcedSlot: forcedSlot,
                                slotProblem: { problems[$0] },
                                dataFloor: { Launcher.dataFloor(manifest: manifest, directory: directory, trusted: trusted) })
    }
}
