import SwitchbackFiles
/// One line of the switch history.
public struct SwitchHistoryEvent: Sendable, Equatable {
    /// What happened.
    public enum Kind: String, Sendable, Codable {
        /// The rollback flag changed (or was set again) by rollbackctl, a directive or auto.
        case `switch`
        /// The launcher could not run the chosen slot and ran the other one instead; the
        /// persisted flag is unchanged.
        case fallback
        /// Before a switch to the previous slot, a migration step's revert ran.
        case revert
        /// Before a switch to the previous slot, the snapshot taken before a migration step
        /// replaced the data; the newer data was archived (the reason names where).
        case restore
        /// A forced switch archived data that nothing could undo (the reason names where).
        case archive
        /// A new release superseded a rollback: its current build runs, on trial.
        case release
        /// A switch that converts the data was interrupted and the next writer finished it
        /// or undid it (the reason says which).
        case recovery
        /// A supervised start was not ready by its start deadline and was stopped
        /// (`to` is the slot it ran; the reason says how long it had).
        case hungStart = "hung_start"
        /// A supervised live switch did not happen: the new child was not ready in time or
        /// exited first, and the serving slot (`from`) kept serving.
        case switchFailed = "switch_failed"
        /// A supervised switch took the stop-first path (the data was converted for the target
        /// while no child served) and the target serves: the reason names why and the pause.
        case stopFirst = "stop_first"
        /// `rollbackctl sync` found the install's view of the remote directive stale (the held
        /// directive expired, or none verified within `remote.max_staleness_s`): written once
        /// per episode, with the sentence `status` shows; `from` and `to` are the slot that
        /// runs next, which does not change.
        case remoteStale = "remote_stale"
        /// A build went on probation: its bake window started (the reason says how long, and
        /// until when); the analyzer runs.
        case probationStarted = "probation_started"
        /// A build passed its bake window (`from` and `to` are its slot; the reason names the
        /// verdict's sentence); it is marked good again with a note.
        case probationPassed = "probation_passed"
        /// A build failed its bake window: the reason is the measurement that failed; the
        /// rollback that follows is a `switch` line of its own.
        case probationFailed = "probation_failed"
        /// A bake window ended without a verdict either way: the build stays.
        case probationInconclusive = "probation_inconclusive"
        /// A check whose failure holds (`on_failure=hold`) failed: the build stays and waits
        /// for `rollbackctl promote` or `abort`.
        case probationHeld = "probation_held"
        /// A dry run's bake window ended with a verdict that would have rolled the build back
        /// (the reason says which measurement): nothing was done.
        case probationWouldRollBack = "probation_would_roll_back"
        /// A dry run's bake window ended with a verdict that would have held the build.
        case probationWouldHold = "probation_would_hold"
        /// `rollbackctl promote` ended a probation as good.
        case probationPromoted = "probation_promoted"
        /// `rollbackctl abort` ended a probation as bad.
        case probationAborted = "probation_aborted"
    }

    /// Seconds since the epoch.
    public var time: Int64
    public var kind: Kind
    public var from: BuildSlot
    public var to: BuildSlot
    public var source: ChoiceSource
    public var reason: String?

    public init(time: Int64, kind: Kind, from: BuildSlot, to: BuildSlot, source: ChoiceSource, reason: String?) {
        self.time = time
        self.kind = kind
        self.from = from
        self.to = to
        self.source = source
        self.reason = reason
    }

    /// The history line (tab-separated, escaped, ending in a newline).
    public func serialized() -> String {
        ["v1", String(time), kind.rawValue, from.rawValue, to.rawValue, source.rawValue,
         KeyValueText.escape(Limits.truncated(reason ?? ""))].joined(separator: "\t") + "\n"
    }

    /// Parses one line; nil for a torn or foreign line, or one whose time is outside
    /// `ValueRange.unixTime` (the line is then counted as unreadable, like any damage).
    public init?<S: StringProtocol>(line: S) {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count == 7, fields[0] == "v1",
              let time = Int64(fields[1]), ValueRange.unixTime.contains(time),
              let kind = Kind(rawValue: String(fields[2])),
              let from = BuildSlot(rawValue: String(fields[3])),
              let to = BuildSlot(rawValue: String(fields[4])),
              let source = ChoiceSource(rawValue: String(fields[5])) else { return nil }
        let reason = KeyValueText.unescape(fields[6])
        // Writers cut reasons at `Limits.storedReasonBytes`: a longer one is not a line we wrote.
        guard reason.utf8.count <= Limits.storedReasonBytes else { return nil }
        // A reason read back is one line, whoever wrote the file.
        self.init(time: time, kind: kind, from: from, to: to, source: source,
                  reason: reason.isEmpty ? nil : OutsideText(reason, limit: Limits.storedReasonBytes).text)
    }
}
