/// A migration step a build would run at its start (from the planning run, part "plan").
public struct PendingStep: Sendable, Equatable {
    /// The step's name ("notes-v2").
    public var name: String
    /// The step's version ("1.2.0"); "" for a first-install step.
    public var version: String
    /// The oldest version that reads the data after it (the step's own version when it declared none).
    public var readerFloor: String

    public init(name: String, version: String, readerFloor: String) {
        self.name = name
        self.version = version
        self.readerFloor = readerFloor
    }
}

/// How a live switch goes.
public enum SwitchPath: Sendable, Equatable {
    /// The target starts beside the serving child (today's live switch).
    case startFirst
    /// Connections wait in the listening sockets' queue; the serving child drains and exits;
    /// the data is converted (back: the current build's downgrade; forward: the target's own
    /// start); the target starts and takes the queue. `why` is one clause:
    /// "1.2.0 migrates notes-v2, which 1.1.0 cannot read" /
    /// "the data (reader floor 1.2.0) must be converted back for 1.1.0".
    case stopFirst(why: String)

    /// The path's name as status and the history show it.
    public var name: String {
        switch self {
        case .startFirst: return "start-first"
        case .stopFirst: return "stop-first"
        }
    }
}

extension LaunchPlanner {
    /// The one decision for both directions.
    /// - back (target `.previous`): stop-first when `dataFloor` (the data state's published
    ///   reader floor, nil when none is published) is above the target's version.
    /// - forward (target `.current`, or a new bundle's current): `pendingSteps` nil means the
    ///   target could not say (an older SDK, a planning run that failed): stop-first, the safe
    ///   side; otherwise stop-first when any step's reader floor is above `servingVersion`,
    ///   else start-first.
    public static func switchPath(target: BuildSlot, targetVersion: String, servingVersion: String,
                                  dataFloor: String?, pendingSteps: [PendingStep]?) -> SwitchPath {
        switch target {
        case .previous:
            guard let dataFloor, !DataState.isReadable(floor: dataFloor, by: targetVersion) else { return .startFirst }
            return .stopFirst(why: "the data (reader floor \(dataFloor)) must be converted back for \(targetVersion)")
        case .current:
            guard let pendingSteps else {
                return .stopFirst(why: "\(targetVersion) cannot say which data steps it runs at its start")
            }
            guard let step = pendingSteps.first(where: { DottedVersion.compare($0.readerFloor, servingVersion) > 0 }) else {
                return .startFirst
            }
            return .stopFirst(why: "\(targetVersion) migrates \(step.name), which \(servingVersion) cannot read")
        }
    }
}
