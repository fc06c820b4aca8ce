/// What one install exports for node_exporter's textfile collector (docs/monitoring.md): a
/// value built from the state directory's files and the manifest, rendered as the Prometheus
/// text format. Pure: `render()` depends on nothing but the value.
public struct MetricsSnapshot: Sendable, Equatable {
    public struct Slot: Sendable, Equatable {
        public var version: String
        public var build: String
        /// "good", "trial" or "bad".
        public var health: String
        /// Starts of this build that used a try without a good mark yet (boot counting; a
        /// start in progress counts until it is marked good).
        public var unmarkedStarts: Int

        public init(version: String, build: String, health: String, unmarkedStarts: Int) {
            self.version = version
            self.build = build
            self.health = health
            self.unmarkedStarts = unmarkedStarts
        }
    }

    public struct Remote: Sendable, Equatable {
        public var acceptedSerial: UInt64?
        public var highestSeenSerial: UInt64?
        public var lastCheckAt: Int64?
        public var lastSuccessAt: Int64?
        public var lastVerifiedAt: Int64?
        public var heldExpiresAt: Int64?
        /// The last check's outcome kind (`applied`, `unchanged`, `not_applicable`, `refused`,
        /// `unreachable`, `not_applied`) and code (`outside_rollout`, `timed_out`, ...).
        public var outcome: String?
        public var code: String?
        public var consecutiveFailures: Int
        public var isStale: Bool
        public var maxStalenessSeconds: Int64
        /// The next check's due time (the marker), in seconds.
        public var nextCheckAt: Int64?

        public init(acceptedSerial: UInt64?, highestSeenSerial: UInt64?, lastCheckAt: Int64?, lastSuccessAt: Int64?,
                    lastVerifiedAt: Int64?, heldExpiresAt: Int64?, outcome: String?, code: String?,
                    consecutiveFailures: Int, isStale: Bool, maxStalenessSeconds: Int64, nextCheckAt: Int64?) {
            self.acceptedSerial = acceptedSerial
            self.highestSeenSerial = highestSeenSerial
            self.lastCheckAt = lastCheckAt
            self.lastSuccessAt = lastSuccessAt
            self.lastVerifiedAt = lastVerifiedAt
            self.heldExpiresAt = heldExpiresAt
            self.outcome = outcome
            self.code = code
            self.consecutiveFailures = consecutiveFailures
            self.isStale = isStale
            self.maxStalenessSeconds = maxStalenessSeconds
            self.nextCheckAt = nextCheckAt
        }
    }

    public var appID: String
    /// The install id (`install` label): random, kept for life, unique across hosts; the id
    /// the rollout bucket comes from (`RemoteStore.installID`).
    public var install: String
    /// The install's rollout bucket for the app (0...99): a directive with rollout percent p
    /// applies when it is below p.
    public var rolloutBucket: Int
    public var stateDirectory: String
    public var current: Slot
    public var previous: Slot
    public var activeSlot: BuildSlot
    /// `none` when the flag was never set, else `cli`, `remote` or `auto`.
    public var source: String
    public var rollback: Bool
    public var remote: Remote?
    public var counts: EventCounts
    public var writtenAt: Int64
    /// Whether the manifest configures a bake window (`analysis.*`): only then are the
    /// probation metrics written.
    public var hasAnalysis: Bool
    /// The last probation (`probation` in the state directory), if any.
    public var probation: ProbationRecord?
    /// The hooks' deliveries, when the manifest configures hooks (docs/hooks.md).
    public var hooks: Hooks?

    /// What the hooks' deliverer recorded (`HookStatus`) and what waits (`HookQueue`).
    public struct Hooks: Sendable, Equatable {
        public var delivered: Int
        public var failed: Int
        public var dropped: Int
        public var queued: Int

        public init(delivered: Int, failed: Int, dropped: Int, queued: Int) {
            self.delivered = delivered
            self.failed = failed
            self.dropped = dropped
            self.queued = queued
        }
    }

    public init(appID: String, install: String, rolloutBucket: Int, stateDirectory: String, current: Slot, previous: Slot, activeSlot: BuildSlot,
                source: String, rollback: Bool, remote: Remote?, counts: EventCounts, writtenAt: Int64,
                hasAnalysis: Bool = false, probation: ProbationRecord? = nil, hooks: Hooks? = nil) {
        self.hooks = hooks
        self.hasAnalysis = hasAnalysis
        self.probation = probation
        self.appID = appID
        self.install = install
        self.rolloutBucket = rolloutBucket
        self.stateDirectory = stateDirectory
        self.current = current
        self.previous = previous
        self.activeSlot = activeSlot
        self.source = source
        self.rollback = rollback
        self.remote = remote
        self.counts = counts
        self.writtenAt = writtenAt
    }

    /// The label value, escaped as the text format wants (backslash, quote, newline).
    static func escape(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// The Prometheus text format: HELP and TYPE for every metric, label `app_id` and
    /// `install` on every series, names `switchback_*`, sorted by metric as promtool wants.
    public func render() -> String {
        var out = ""
        let base = "app_id=\"\(Self.escape(appID))\",install=\"\(Self.escape(install))\""
        func metric(_ name: String, _ type: String, _ help: String, _ series: [(labels: String, value: String)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (labels, value) in series {
                out += "\(name){\(base)\(labels.isEmpty ? "" : "," + labels)} \(value)\n"
            }
        }
        func flag(_ on: Bool) -> String { on ? "1" : "0" }
        metric("switchback_info", "gauge", "The install: its state directory; always 1.",
               [("state_dir=\"\(Self.escape(stateDirectory))\"", "1")])
        metric("switchback_rollout_bucket_number", "gauge",
               "The install's rollout bucket (0-99): a directive with rollout percent p applies when it is below p.",
               [("", String(rolloutBucket))])
        metric("switchback_slot_info", "gauge", "Each slot's version and build; always 1.",
               [(BuildSlot.current, current), (BuildSlot.previous, previous)].map { slot, record in
                   ("slot=\"\(slot.rawValue)\",version=\"\(Self.escape(record.version))\",build=\"\(Self.escape(record.build))\"", "1")
               })
        metric("switchback_active_slot", "gauge", "1 for the slot the next start runs, 0 for the other.",
               [BuildSlot.current, .previous].map { ("slot=\"\($0.rawValue)\"", flag($0 == activeSlot)) })
        metric("switchback_rollback", "gauge", "1 when the rollback flag is set (the previous slot runs).",
               [("", flag(rollback))])
        metric("switchback_rollback_source", "gauge", "1 for who set the rollback flag last (none, cli, remote, auto).",
               ["none", "cli", "remote", "auto"].map { ("source=\"\($0)\"", flag($0 == source)) })
        metric("switchback_slot_health", "gauge", "1 for each slot's health verdict (good, trial, bad).",
               [(BuildSlot.current, current), (BuildSlot.previous, previous)].flatMap { slot, record in
                   ["good", "trial", "bad"].map { ("health=\"\($0)\",slot=\"\(slot.rawValue)\"", flag($0 == record.health)) }
               })
        metric("switchback_slot_unmarked_starts", "gauge",
               "Starts of each slot's build that used a try without a good mark (a start in progress included).",
               [(BuildSlot.current, current), (BuildSlot.previous, previous)].map { slot, record in
                   ("slot=\"\(slot.rawValue)\"", String(record.unmarkedStarts))
               })
        metric("switchback_switches_total", "counter", "Switches of the rollback flag (rollbackctl, directives, automatic).",
               [("", String(counts.switches))])
        metric("switchback_rollbacks_total", "counter", "Switches to the previous slot, by who made them.",
               [ChoiceSource.cli, .remote, .auto].map { ("source=\"\($0.rawValue)\"", String(counts.rollbacks[$0] ?? 0)) })
        metric("switchback_failed_starts_total", "counter",
               "Failed starts: a slot that could not run, a supervised start or live switch not ready in time.",
               [("", String(counts.failedStarts))])
        if let remote {
            func time(_ value: Int64?) -> [(String, String)] { value.map { [("", String($0))] } ?? [] }
            metric("switchback_remote_accepted_serial", "gauge", "The serial of the last directive applied (0: none).",
                   [("", String(remote.acceptedSerial ?? 0))])
            metric("switchback_remote_highest_seen_serial", "gauge", "The highest serial verified, applied or not (0: none).",
                   [("", String(remote.highestSeenSerial ?? remote.acceptedSerial ?? 0))])
            metric("switchback_remote_last_check_timestamp_seconds", "gauge", "When the directive was last checked.",
                   time(remote.lastCheckAt))
            metric("switchback_remote_last_success_timestamp_seconds", "gauge", "When a check last succeeded (200 or 304 from an authentic server).",
                   time(remote.lastSuccessAt))
            metric("switchback_remote_last_verified_timestamp_seconds", "gauge", "When a fetched directive last verified (a 304 does not count).",
                   time(remote.lastVerifiedAt))
            metric("switchback_remote_held_expiry_timestamp_seconds", "gauge", "When the directive last verified expires.",
                   time(remote.heldExpiresAt))
            metric("switchback_remote_next_check_timestamp_seconds", "gauge", "When the next check is due.",
                   time(remote.nextCheckAt))
            metric("switchback_remote_last_check_outcome", "gauge", "1, labelled with the last check's outcome and code.",
                   remote.outcome.map { [("code=\"\(Self.escape(remote.code ?? ""))\",outcome=\"\(Self.escape($0))\"", "1")] } ?? [])
            metric("switchback_remote_consecutive_failures", "gauge", "Failed checks in a row.",
                   [("", String(remote.consecutiveFailures))])
            metric("switchback_remote_stale", "gauge", "1 when the install's view of the directive is stale (docs/remote.md).",
                   [("", flag(remote.isStale))])
            metric("switchback_remote_max_staleness_seconds", "gauge", "The staleness limit (remote.max_staleness_s).",
                   [("", String(remote.maxStalenessSeconds))])
        }
        if hasAnalysis {
            metric("switchback_probation", "gauge", "1, labelled with the last probation's slot, version, build and state (\(ProbationRecord.State.allCases.map(\.rawValue).joined(separator: ", "))).",
                   probation.map { record in
                       [("build=\"\(Self.escape(record.build))\",slot=\"\(record.slot.rawValue)\",state=\"\(record.state.rawValue)\",version=\"\(Self.escape(record.version))\"", "1")]
                   } ?? [])
            metric("switchback_probation_ends_timestamp_seconds", "gauge", "When the last probation's bake window ends (or ended).",
                   probation.map { [("", String($0.endsAt / 1000))] } ?? [])
            metric("switchback_analysis_results_total", "counter", "Bake windows ended by the analysis, by the verdict's word.",
                   EventCounts.analysisResultNames.map { ("result=\"\($0)\"", String(counts.analysisResults[$0] ?? 0)) })
        }
        if let hooks {
            metric("switchback_hook_events_total", "counter", "History events the hooks were to be told of, by what became of them (docs/hooks.md).",
                   [("outcome=\"delivered\"", String(hooks.delivered)), ("outcome=\"failed\"", String(hooks.failed)),
                    ("outcome=\"dropped\"", String(hooks.dropped))])
            metric("switchback_hook_queue_length", "gauge", "Events waiting for the hooks' deliverer.", [("", String(hooks.queued))])
        }
        metric("switchback_metrics_written_timestamp_seconds", "gauge", "When this file was written.",
               [("", String(writtenAt))])
        return out
    }
}
