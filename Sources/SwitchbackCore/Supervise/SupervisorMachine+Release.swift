/// A new release installed at the bundle's path while the supervisor runs (the driver's
/// side is Supervisor+Release.swift). The machine does not switch here: it learns the new
/// versions, finds each child's build in the new release's slots, and asks for the persisted
/// choice to be looked at again. The switch that follows is the usual one, chosen by
/// `LaunchPlanner.switchPath` like any other: start-first, or stop-first when the new build's
/// steps leave data the serving build cannot read.
extension SupervisorMachine {
    /// The two slots of the release now at the bundle's path.
    struct InstalledRelease: Equatable {
        var currentVersion: String
        var currentBuild: String
        var previousVersion: String
        var previousBuild: String

        /// The slot that holds `build`, if any.
        func slot(of build: String) -> BuildSlot? {
            if build == currentBuild { return .current }
            if build == previousBuild { return .previous }
            return nil
        }
    }

    /// Adopts `release`: every child is called by the slot its build has in it. A serving
    /// build it holds in neither slot is kept as "outdated" under the previous slot's name,
    /// and replaced by whatever the choice selects (when that switch fails, the new release's
    /// previous slot is the one that starts again). Only sent between switches (the driver
    /// holds a release back while one is under way): the serving child, and old children
    /// still draining after the last start-first switch.
    mutating func releaseInstalled(_ release: InstalledRelease) -> [Action] {
        let old = configuration
        func relabel(_ child: inout SupervisedChild) {
            let version = child.outdatedVersion ?? old.version(child.knownSlot)
            guard let build = child.build else { return }
            if let slot = release.slot(of: build) {
                child.slot = slot
                child.intendedSlot = slot
                child.outdatedVersion = nil
            } else {
                child.slot = .previous
                child.intendedSlot = .previous
                child.outdatedVersion = version
            }
        }
        if case .running(var child) = state {
            relabel(&child)
            state = .running(child)
        }
        for index in draining.indices { relabel(&draining[index]) }
        configuration.currentVersion = release.currentVersion
        configuration.previousVersion = release.previousVersion
        var said = "release \(release.currentVersion) (current) with \(release.previousVersion) (previous) was installed at the bundle's path"
        if let child = serving {
            if let version = child.outdatedVersion {
                said += "; the serving build (\(version)) is in neither of its slots"
            } else if let slot = child.slot {
                said += "; the serving build is its \(slot.rawValue) slot"
            }
        }
        return [.say(said + "."), .publish, .reconsiderChoice]
    }
}
