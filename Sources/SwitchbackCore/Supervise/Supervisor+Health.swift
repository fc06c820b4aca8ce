#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// Verdicts the supervisor writes: a good build that keeps crashing is marked bad (and the
/// other slot chosen), and a child made ready by a probe or READY=1 is marked good.
extension Supervisor {
    /// Crashes before the good mark use up tries in the child's own start-up; crashes of a
    /// build already good are the machine's to count (`goodBuildCrashed`).
    func countCrash(slot: BuildSlot, build: String) {
        guard trusted else { return }
        let identity = BuildIdentity(sha256: build, version: manifest[slot].version)
        guard HealthStore(directory: directory).load().record.health(of: identity, tries: manifest.trialTries).isGood else { return }
        send(.goodBuildCrashed(slot: slot, build: build))
    }

    /// A good build crashed K times within the window: marked bad, and the other slot chosen
    /// when it is not bad too.
    func markBad(slot: BuildSlot, build: String, why: String, by: ChoiceSource = .auto) {
        let store = HealthStore(directory: directory)
        let record = store.load().record
        let identity = BuildIdentity(sha256: build, version: manifest[slot].version)
        do {
            try store.update(durable: true) { (record: inout HealthRecord) throws(SwitchbackError) in
                record.mark(identity, .bad(by: by), tries: manifest.trialTries, note: why, at: currentUnixTime())
            }
        } catch {
            Launcher.printError("launcher: supervisor: the \(slot.rawValue) build \(why), but its bad verdict could not be recorded (\(error.message)).")
        }
        let other = record.health(of: slot.other, in: manifest)
        let description = "the \(slot.rawValue) build (\(manifest[slot].version)) \(why)"
        switch HealthPolicy.handover(to: other) {
        case .otherRejected(let note):
            Launcher.printError("launcher: supervisor: WARNING: \(description), but automatic rollback will not switch to the \(slot.other.rawValue) build (\(manifest[slot.other].version)), which was rejected: \(note). Fix the build, or choose one with rollbackctl.")
        case .switchToOther:
            let switcher = Switcher(bundleRoot: bundleRoot, manifest: manifest, directory: directory)
            if slot == .current, machine.serving != nil, case .stopFirst = switcher.pathBack() {
                // A child of the current build serves (a failed bake window, rollbackctl abort):
                // the data is converted back only once it has stopped (stop-first).
                let request = SwitchRequest(id: "\(Self.ownRequestPrefix)\(currentUnixTime())", source: by, reason: description, force: false,
                                            command: "rollbackctl rollback", fromBuild: manifest.current.sha256)
                Launcher.printError("launcher: supervisor: \(description); switching to the previous slot (\(manifest.previous.version)) stop-first.")
                send(.switchRequested(request, path: switcher.pathBack()))
                return
            }
            // No child is serving, or the data needs no conversion: nothing reads data it cannot.
            do {
                let result = try switcher.perform(rollback: slot.other == .previous, source: by, reason: description, handsOff: false)
                if let refusal = result.refusal {
                    Launcher.printError("launcher: supervisor: \(description), but it stays: \(refusal)")
                    return
                }
            } catch {
                Launcher.printError("launcher: supervisor: \(description), but the switch could not be recorded: \(error.message)")
                return
            }
            Launcher.printError("launcher: supervisor: \(description); starting the \(slot.other.rawValue) slot (\(manifest[slot.other].version)) instead.")
        case .otherBad:
            Launcher.printError("launcher: supervisor: \(description), and the \(slot.other.rawValue) build is bad too.")
        }
    }

    /// A ready child's build is marked good, as the app would have: needed when a probe or an
    /// app's own READY=1 made it ready; nothing is written when the launcher in the child
    /// already recorded the app's good mark.
    func recordGoodMark(_ child: SupervisedChild, how: String) {
        guard trusted, let slot = child.slot, let build = child.build else { return }
        let identity = BuildIdentity(sha256: build, version: manifest[slot].version)
        let store = HealthStore(directory: directory)
        let known = store.load().record.health(of: identity, tries: manifest.trialTries)
        let session = StartSession(store: store, build: identity, tries: manifest.trialTries, known: known)
        if session.markGood(note: "ready: \(how)") != 0 {
            Launcher.printError("launcher: supervisor: \(child.title) is ready, but its good mark could not be recorded in \(directory.path).")
        }
        // A ready child is an event of the supervisor's, not of a start: the metrics file
        // shows the build good now, not at the next check (docs/monitoring.md).
        Observer.refreshMetrics(in: directory, manifest: manifest)
    }

    /// The builds the health file calls good now (none when the state directory is not
    /// trusted: the supervisor reads nothing there then).
    func goodBuilds() -> Set<String> {
        guard trusted else { return [] }
        return Set(HealthStore(directory: directory).load().record.builds.filter(\.isGood).map(\.build))
    }

    /// A good mark written for a starting child's build since it started makes it ready,
    /// whatever happened to its `READY=1`: the launcher in the child writes the mark (durably)
    /// before it sends the datagram. The health file is read again only when it changed.
    func noticeGoodMarks() {
        guard trusted, machine.awaitsGoodMark else { return }
        let path = HealthStore(directory: directory).path
        let fingerprint = (try? FileSystem.status(path)).flatMap { $0.map(FileFingerprint.init) }
        guard fingerprint != healthSeen else { return }
        healthSeen = fingerprint
        send(.goodBuilds(goodBuilds()))
    }
}
