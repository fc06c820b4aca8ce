#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// The persisted choice: when it changes (inotify, or the poll), which slot it selects, and
/// the switch that follows.
extension Supervisor {
    /// Tells the machine which slot the persisted choice selects when the state or health
    /// files changed while one child serves: it replaces the child when that is another slot
    /// (with listening sockets, a candidate starts beside the serving child; without, the
    /// serving child stops first).
    func watchPersistedChoice() {
        guard trusted, let runningSlot = machine.watchedSlot else { return }
        let now = fingerprints()
        guard now != watched else { return }
        watched = now
        let (wanted, fallback) = desiredChoice(running: runningSlot)
        send(.choiceSelects(wanted, path: wanted == runningSlot ? .startFirst : switchPath(to: wanted, from: runningSlot), fallback: fallback))
    }

    /// How a switch from the serving slot to `target` goes (`LaunchPlanner.switchPath`): back,
    /// from the data state the current build published; forward, from the steps the target
    /// would run at its start, asked of it by a planning run (`PendingSteps.query`, read-only,
    /// while the serving child goes on serving). A planning run that fails leaves the target
    /// unable to say: the switch goes stop-first, the safe side, and the sentence says why.
    func switchPath(to target: BuildSlot, from serving: BuildSlot) -> SwitchPath {
        // A serving build of a release installed before this one is named by its own version.
        let targetVersion = manifest[target].version
        let servingVersion = machine.serving?.outdatedVersion ?? manifest[serving].version
        switch target {
        case .previous:
            return Switcher(bundleRoot: bundleRoot, manifest: manifest, directory: directory).pathBack()
        case .current:
            var steps: [PendingStep]?
            switch PendingSteps.query(bundleRoot: bundleRoot, manifest: manifest, directory: directory, slot: target) {
            case .success(let answer): steps = answer
            case .failure(let error): Launcher.printError("launcher: supervisor: \(error.message)")
            }
            return LaunchPlanner.switchPath(target: target, targetVersion: targetVersion, servingVersion: servingVersion,
                                            dataFloor: nil, pendingSteps: steps)
        }
    }

    /// The slot the persisted choice selects now. The running build keeps running unless it
    /// was marked bad: using its last try is not a reason to replace it (the next start is).
    func desiredSlot(running: BuildSlot?) -> BuildSlot { desiredChoice(running: running).slot }

    /// The same, and the reason when no choice selects that slot and the planner does (both
    /// builds bad: it runs the one that started well most recently), for the history.
    func desiredChoice(running: BuildSlot?) -> (slot: BuildSlot, fallback: String?) {
        // The launcher's planner, with the running child as an input; the slot checks and the
        // data are left to the child's own plan.
        let loaded = StateStore(directory: directory).load()
        let health = HealthStore(directory: directory).load()
        // A state or health file the supervisor does not trust (another account's, or one a
        // group could write) decides nothing: what runs keeps running.
        if loaded.isUntrusted || health.problem?.code == .insecurePermissions { return (running ?? .current, nil) }
        let planner = LaunchPlanner(manifest: manifest, state: loaded, isTrusted: true,
                                    health: health.record,
                                    forcedSlot: environmentValue("SWITCHBACK_SLOT"), running: running, checksSlots: false)
        guard let decision = (try? planner.plan())?.decision else { return (running ?? .current, nil) }
        guard case .bothBad = decision.reason else { return (decision.slot, nil) }
        return (decision.slot, "the supervisor runs the \(decision.slot.rawValue) slot (\(manifest[decision.slot].version)) because \(decision.explanation(manifest))")
    }

    func fingerprints() -> [FileFingerprint?] {
        [directory.statePath, HealthStore(directory: directory).path].map { path in
            (try? FileSystem.status(path)).flatMap { $0.map(FileFingerprint.init) }
        }
    }

    /// inotify on the state directory: a changed choice is seen at once, not at the next poll.
    func watchStateDirectory() {
        guard trusted else { return }
        inotifyFD = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotifyFD >= 0 else { return }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB)
        if inotify_add_watch(inotifyFD, directory.path, mask) < 0 {
            close(inotifyFD)
            inotifyFD = -1
            return
        }
        watchDirectiveFile()
    }

    func drainInotify() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes({ read(inotifyFD, $0.baseAddress, $0.count) })
            guard count > 0 else { return }
            if directiveWatch >= 0 { noticeDirectoryEvents(buffer[0..<count]) }
        }
    }
}
