#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// The persisted choice: when it changes (inotify, or the poll), which slot it selects, and
/// the switch that follows.
extension Supervisor {
    /// Replaces the child when the state or health files changed and now select another
    /// slot: with listening sockets, a candidate starts beside the serving child; without,
    /// the serving child stops first.
    func watchPersistedChoice() {
        guard trusted, let running = serving, let runningSlot = running.slot, candidate == nil, !replacing,
              stopDeadline == nil, running.stop == nil else { return }
        let now = fingerprints()
        guard now != watched else { return }
        watched = now
        let wanted = desiredSlot(running: runningSlot)
        guard wanted != runningSlot else { return }
        if listeners.isEmpty || running.phase != .ready {
            Launcher.printError("launcher: supervisor: the persisted choice now selects the \(wanted.rawValue) slot; replacing \(running.title).")
            kill(running.pid, SIGTERM)
            replacing = true
            serving?.killAt = monotonicNow() + Double(settings.graceMilliseconds) / 1000
            return
        }
        Launcher.printError("launcher: supervisor: the persisted choice now selects the \(wanted.rawValue) slot; starting it beside \(running.title), which serves until it is ready.")
        systemd?.send("RELOADING=1", "STATUS=Switching to the \(wanted.rawValue) slot (\(manifest[wanted].version))", "MONOTONIC_USEC=\(Int64(monotonicNow() * 1e6))")
        candidate = spawn(intended: wanted)
        if candidate == nil {
            lastSwitchFailure = SupervisorRecord.SwitchFailure(slot: wanted, at: currentUnixTime(), reason: "the \(wanted.rawValue) slot could not be started")
        }
        publish()
    }

    /// The slot the persisted choice selects now. The running build keeps running unless it
    /// was marked bad: using its last try is not a reason to replace it (the next start is).
    func desiredSlot(running: BuildSlot?) -> BuildSlot {
        let loaded = StateStore(directory: directory).load()
        let record = HealthStore(directory: directory).load().record
        guard let unchecked = try? StartPlan.make(state: loaded, health: record, manifest: manifest,
                                                  forcedSlot: environmentValue("SWITCHBACK_SLOT"), applyHealth: false),
              let plan = try? StartPlan.make(state: loaded, health: record, manifest: manifest,
                                             forcedSlot: environmentValue("SWITCHBACK_SLOT")) else {
            return running ?? .current
        }
        let chosen = unchecked.decision.slot
        if chosen == running, !record.health(of: chosen, in: manifest).isBad { return chosen }
        return plan.decision.slot
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
        }
    }

    func drainInotify() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(inotifyFD, $0.baseAddress, $0.count) }) > 0 {}
    }
}
