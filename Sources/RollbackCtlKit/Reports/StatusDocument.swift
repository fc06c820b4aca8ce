/// What `rollbackctl status --json` prints: one `Codable` value that the command writes
/// (with `JSONWriter`, without Foundation) and tests and scripts decode (with `JSONDecoder`).
///
/// The keys and value shapes are an operator-facing format (docs/operations.md quotes
/// them): fields may be added, never renamed. Every key is always present; a nil optional
/// is `null`. Times are RFC 3339 strings; slots, sources, verdicts and kinds are the
/// strings the state files use.
package struct StatusDocument: Codable, Equatable, Sendable {
    package var appID: String
    /// The slot the next start runs ("current" or "previous"); nil when the start is refused.
    package var activeSlot: String?
    /// The launcher's sentence when the next start is refused (exit 70), else nil.
    package var refusal: String?
    /// The plan's reason, as a stable code (docs/design.md, "The launch planner").
    package var reasonCode: String
    package var rollback: Bool
    /// Who set the flag: "default", "cli", "remote" or "auto".
    package var source: String
    package var reason: String?
    package var changedAt: String?
    /// One sentence: which slot the next start runs and why.
    package var explanation: String
    package var warning: String?
    package var writeProblem: String?
    package var pendingSwitch: Bool
    package var firstRelease: Bool
    package var fromBuild: Build?
    package var toBuild: Build?
    package var stateProblem: String?
    package var stateTrust: StateTrust
    /// "current" and "previous".
    package var slots: [String: Slot]
    package var stateDirectory: String
    /// The live supervisor of this bundle, if one runs.
    package var supervisor: Supervisor?
    package var bundle: String
    /// The remote directive's settings and last checks; nil when none is configured or recorded.
    package var remote: Remote?
    package var data: DataStatus
    /// The last probation (bake window) the supervisor recorded; nil when there is none.
    package var probation: Probation? = nil
    /// The hooks' deliveries (docs/hooks.md); nil when the manifest configures none.
    package var hooks: Hooks? = nil

    enum CodingKeys: String, CodingKey {
        case appID = "app_id", activeSlot = "active_slot", refusal, reasonCode = "reason_code", rollback, source, reason, changedAt = "changed_at"
        case explanation, warning, writeProblem = "write_problem", pendingSwitch = "pending_switch"
        case firstRelease = "first_release", fromBuild = "from_build", toBuild = "to_build"
        case stateProblem = "state_problem", stateTrust = "state_trust", slots, stateDirectory = "state_directory"
        case supervisor, bundle, remote, data, probation, hooks
    }

    /// A build the flag's last change switched from or to.
    package struct Build: Codable, Equatable, Sendable {
        package var sha256: String
        package var version: String
    }

    /// Whether the state directory's files are trusted, and why not.
    package struct StateTrust: Codable, Equatable, Sendable {
        package var trusted: Bool
        package var reason: String?
    }

    /// One slot: its build, whether its file passes the checks, its health.
    package struct Slot: Codable, Equatable, Sendable {
        package var version: String
        package var build: String
        package var abi: String
        package var sha256: String
        package var ok: Bool
        package var problem: String?
        package var health: Health?
    }

    /// The verdict on a slot's build.
    package struct Health: Codable, Equatable, Sendable {
        /// "good", "bad" or "trial".
        package var verdict: String
        /// Starts left on trial (only for "trial").
        package var triesLeft: Int?
        package var markedBy: String?
        package var failedStarts: Int
        package var note: String?
        package var lastGoodAt: String?
        package var summary: String

        enum CodingKeys: String, CodingKey {
            case verdict, triesLeft = "tries_left", markedBy = "marked_by", failedStarts = "failed_starts", note
            case lastGoodAt = "last_good_at", summary
        }
    }

    /// The supervisor's record, when its pid is a running launcher of this bundle.
    package struct Supervisor: Codable, Equatable, Sendable {
        package var pid: Int32
        package var startedAt: String
        package var childPID: Int32?
        package var childSlot: String?
        package var childUptimeSeconds: Int64?
        package var restarts: Int
        package var childReady: Bool?
        package var candidatePID: Int32?
        package var candidateSlot: String?
        package var switchFailure: SwitchFailure?
        /// The stop-first switch under way: connections wait while no child serves.
        package var pause: StopFirstSwitch? = nil
        /// The last stop-first switch that happened.
        package var lastSwitch: StopFirstSwitch? = nil

        enum CodingKeys: String, CodingKey {
            case pid, startedAt = "started_at", childPID = "child_pid", childSlot = "child_slot"
            case childUptimeSeconds = "child_uptime_s", restarts, childReady = "child_ready"
            case candidatePID = "candidate_pid", candidateSlot = "candidate_slot", switchFailure = "switch_failure"
            case pause, lastSwitch = "last_switch"
        }
    }

    /// A stop-first switch (docs/supervise.md, "Live switches"): its path, why, and the pause.
    package struct StopFirstSwitch: Codable, Equatable, Sendable {
        package var path: String
        package var from: String
        package var to: String
        package var fromVersion: String
        package var toVersion: String
        package var why: String
        /// The pause, from the drain to the target's readiness; absent while it runs.
        package var pausedMilliseconds: Int?
        package var at: String

        enum CodingKeys: String, CodingKey {
            case path, from, to, fromVersion = "from_version", toVersion = "to_version", why
            case pausedMilliseconds = "paused_ms", at
        }
    }

    /// The last live switch that failed.
    package struct SwitchFailure: Codable, Equatable, Sendable {
        package var slot: String
        package var at: String
        package var reason: String
    }

    /// The remote directive: settings, the last checks' outcome, freshness.
    package struct Remote: Codable, Equatable, Sendable {
        package var intervalSeconds: Int
        package var url: String?
        package var lastAttemptAt: String?
        package var lastSuccessAt: String?
        package var outcome: String?
        package var code: String?
        package var reason: String?
        package var acceptedSerial: UInt64?
        package var highestSeenSerial: UInt64?
        package var lastVerifiedAt: String?
        package var heldExpiresAt: String?
        package var consecutiveFailures: Int
        package var maxStalenessSeconds: Int
        package var stale: Bool
        package var staleCause: String?
        package var staleSince: String?
        package var staleReason: String?
        package var recordProblem: String?

        enum CodingKeys: String, CodingKey {
            case intervalSeconds = "interval_s", url, lastAttemptAt = "last_attempt_at", lastSuccessAt = "last_success_at"
            case outcome, code, reason, acceptedSerial = "accepted_serial", highestSeenSerial = "highest_seen_serial"
            case lastVerifiedAt = "last_verified_at", heldExpiresAt = "held_expires_at"
            case consecutiveFailures = "consecutive_failures", maxStalenessSeconds = "max_staleness_s", stale
            case staleCause = "stale_cause", staleSince = "stale_since", staleReason = "stale_reason"
            case recordProblem = "record_problem"
        }
    }

    /// What the current build last published about its data, and the last archive.
    package struct DataStatus: Codable, Equatable, Sendable {
        package var published: Bool
        package var ignored: String?
        package var managed: Bool?
        package var readerFloor: String?
        package var publishedBy: String?
        package var publishedAt: String?
        package var rollbackTo: String
        package var rollbackPlan: String?
        package var rollbackDataSafe: Bool?
        package var detail: String?
        package var lastArchive: Archive?

        enum CodingKeys: String, CodingKey {
            case published, ignored, managed, readerFloor = "reader_floor", publishedBy = "published_by"
            case publishedAt = "published_at", rollbackTo = "rollback_to", rollbackPlan = "rollback_plan"
            case rollbackDataSafe = "rollback_data_safe", detail, lastArchive = "last_archive"
        }
    }

    /// The last probation: its build, window, state and each check's last measurement.
    package struct Probation: Codable, Equatable, Sendable {
        package var slot: String
        package var version: String
        package var build: String
        /// A `ProbationRecord.State`: "baking", "passed", "failed", "held", "inconclusive",
        /// "promoted", "aborted", "would_roll_back" or "would_hold".
        package var state: String
        package var startedAt: String
        package var endsAt: String
        package var windowSeconds: Int64
        /// Seconds until the window ends (0 once it has, or when it is not baking).
        package var secondsLeft: Int64
        /// The verdict's sentence; nil while baking.
        package var result: String?
        /// Whether a supervisor runs that judges it (a baking probation without one resumes
        /// when the supervisor starts again).
        package var supervised: Bool
        package var checks: [Check]
        /// Why the record was ignored (damaged), else nil.
        package var problem: String?
        /// With `analysis.baseline=true`: the build compared with, serving beside it; nil otherwise.
        package var baseline: Baseline? = nil

        enum CodingKeys: String, CodingKey {
            case slot, version, build, state, startedAt = "started_at", endsAt = "ends_at", windowSeconds = "window_s"
            case secondsLeft = "seconds_left", result, supervised, checks, problem, baseline
        }

        /// The baseline of a comparison: its slot, version and child, or why none ran.
        package struct Baseline: Codable, Equatable, Sendable {
            package var slot: String?
            package var version: String?
            package var pid: Int32?
            /// Why no baseline served beside the build (a stop-first switch, the first start).
            package var absent: String?
        }
    }

    /// The hooks: where events go, and what the deliverer did (`HookStatus`, `HookQueue`).
    package struct Hooks: Codable, Equatable, Sendable {
        package var command: String?
        package var url: String?
        package var delivered: Int
        package var failed: Int
        /// Events waiting in the queue.
        package var queued: Int
        /// Events not queued because the queue was full.
        package var dropped: Int
        package var lastFailure: String?
        package var lastFailureAt: String?
        package var lastDeliveredAt: String?
        /// Why the hooks.* settings do not read, else nil.
        package var problem: String?

        enum CodingKeys: String, CodingKey {
            case command, url, delivered, failed, queued, dropped, lastFailure = "last_failure", lastFailureAt = "last_failure_at"
            case lastDeliveredAt = "last_delivered_at", problem
        }
    }

    /// One check's last measurement.
    package struct Check: Codable, Equatable, Sendable {
        package var name: String
        /// "successful", "failed", "inconclusive" or "error".
        package var phase: String
        package var sentence: String
        package var at: String?
    }

    /// The newest restore or archive event in the history.
    package struct Archive: Codable, Equatable, Sendable {
        package var time: String
        package var kind: String
        package var reason: String?
    }
}
