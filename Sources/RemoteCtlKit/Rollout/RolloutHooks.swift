import Dispatch
import RollbackCtlKit
import Synchronization
import SwitchbackCore
import SwitchbackFiles

/// The plan's hooks (`hooks.*` in the plan, the settings an install's manifest takes:
/// docs/hooks.md), told of each step of a rollout: a step's directive published, a pause
/// judged, a wait for an operator, the rollback published, the rollout complete. Sent in the
/// order they happen, one at a time, on a queue of their own: a hook that hangs or fails
/// never delays a publication or a pause. Before the command exits it waits for what is
/// still being sent, at most one delivery's bound per event (`hooks.timeout_ms` and the
/// retries); the failures are said on stdout then, one line each (the run's own lines are
/// the main thread's alone).
final class RolloutHooks: @unchecked Sendable {
    /// What happened, as the event's `kind`.
    enum Kind: String {
        case published = "rollout_step_published"
        case judged = "rollout_step_judged"
        case waiting = "rollout_waiting"
        case rolledBack = "rollout_rolled_back"
        case completed = "rollout_completed"
    }

    private let delivery: Delivery
    private let plan: RolloutPlan
    private let appID: String
    private let console: Console
    private let queue = DispatchQueue(label: "switchback.rollout-hooks")
    private let group = DispatchGroup()
    private let host = HookEvent.hostName()
    private let failures = Mutex<[String]>([])
    private let outstanding = Mutex(0)

    init?(plan: RolloutPlan, appID: String, console: Console) {
        guard let settings = plan.hooks else { return nil }
        delivery = Delivery(settings: settings)
        self.plan = plan
        self.appID = appID
        self.console = console
    }

    /// Queues the event of `kind` about `step` (1-based); `serial` and `result` when known.
    func tell(_ kind: Kind, step: Int, serial: UInt64?, result: String?, now: Int64) {
        let id = HookEvent.newID()
        var fields: [(String, String)] = [
            ("v", "1"), ("id", JSONString.quoted(id)), ("kind", JSONString.quoted(kind.rawValue)),
            ("time", JSONString.quoted(formatRFC3339(now))), ("time_unix", String(now)),
            ("app_id", JSONString.quoted(appID)), ("version", JSONString.quoted(plan.version)),
            ("step", String(step)), ("steps", String(plan.steps.count)),
            ("percent", String(plan.steps[max(0, min(step, plan.steps.count) - 1)])),
        ]
        fields.append(("serial", serial.map(String.init) ?? "null"))
        fields.append(("result", result.map(JSONString.quoted) ?? "null"))
        fields.append(("host", JSONString.quoted(host)))
        let bytes = Array(("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}\n").utf8)
        outstanding.withLock { $0 += 1 }
        queue.async(group: group) { [self] in
            if let failure = delivery.send(bytes, id: id, kind: kind.rawValue) {
                failures.withLock { $0.append(failure) }
            }
            outstanding.withLock { $0 -= 1 }
        }
    }

    /// Waits for the events still being sent, bounded.
    func finish() {
        let settings = delivery.settings
        let perEvent = settings.timeoutMilliseconds * (settings.retries + 1)
            + (0..<settings.retries).reduce(0) { $0 + HookSettings.backoffMilliseconds(attempt: $1 + 1) }
        let pending = group.wait(timeout: .now() + .milliseconds(perEvent * max(1, outstanding.withLock { $0 }) + 1000))
        for failure in failures.withLock({ $0 }) { console.out("Hooks: \(failure).") }
        if pending == .timedOut { console.out("Hooks: events were still being sent when the rollout stopped; they were not delivered.") }
    }
}
