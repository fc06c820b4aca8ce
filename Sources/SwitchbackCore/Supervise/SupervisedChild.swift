#if canImport(Glibc)
import Glibc
#endif

/// One child of the supervisor, as a value: which slot it runs, how far it got (starting,
/// ready, draining), and its timers. `SupervisorMachine` holds at most one serving child, one
/// candidate (the new slot of a live switch) and any number of draining ones; the driver
/// holds the child's report pipe.
struct SupervisedChild: Equatable {
    enum Phase: Equatable {
        /// Started, not ready yet: the start deadline runs.
        case starting
        /// Ready (good mark, READY=1 or a probe, and the minimum time up).
        case ready
        /// Replaced by a new child: first out of the accept pool (the drain signal), then, at
        /// `terminateAt`, SIGTERM; SIGKILL at the end of the grace period.
        case draining
    }

    /// Why the supervisor is stopping a child it did not want to stop: said when it exits.
    enum Stop: Equatable {
        case hung(seconds: Double)
        case watchdog
    }

    /// When a child showed it was ready, and how: ready once the minimum time has passed since.
    struct ReadySignal: Equatable {
        var at: Double
        var how: String
    }

    let pid: pid_t
    let startedAt: Double
    /// The slot the persisted choice selected when the child was started; the child names
    /// the one it actually runs (`slot`) on its report pipe.
    var intendedSlot: BuildSlot?
    var slot: BuildSlot?
    /// Set when a release installed under the supervisor holds this child's build in neither
    /// slot: the version it runs (the child is then called the previous slot's, and replaced).
    var outdatedVersion: String?
    var build: String?
    var phase = Phase.starting
    /// When an unready child is stopped: the start deadline, extended by EXTEND_TIMEOUT_USEC.
    var deadline: Double?
    var readySignal: ReadySignal?
    /// The builds the health file called good when the child started: a good mark of its own
    /// build recorded since then is the child's (or an operator's), and makes it ready.
    var goodBuildsAtStart: Set<String> = []
    /// Whether it holds a listening socket it inherited (`X_SWITCHBACK_ADOPTED`).
    var hasAdoptedSocket = false
    var lastWatchdogPing: Double
    var stop: Stop?
    /// When a draining child gets SIGTERM.
    var terminateAt: Double?
    /// When a draining child gets the drain signal a second time: a thread of its that
    /// entered `accept` in the very instant of the first was not woken by it.
    var drainAgainAt: Double?
    /// When SIGKILL follows the SIGTERM or SIGABRT already sent.
    var killAt: Double?

    init(pid: pid_t, intendedSlot: BuildSlot?, startedAt: Double, deadline: Double?, goodBuildsAtStart: Set<String> = []) {
        self.pid = pid
        self.intendedSlot = intendedSlot
        self.startedAt = startedAt
        self.deadline = deadline
        self.goodBuildsAtStart = goodBuildsAtStart
        lastWatchdogPing = startedAt
    }

    /// The slot it runs, as far as the supervisor knows.
    var knownSlot: BuildSlot { slot ?? intendedSlot ?? .current }

    /// "the previous slot (pid 42)", or "the app (pid 42)" before it named its slot.
    var title: String {
        if let outdatedVersion { return "\(outdatedVersion), of the release before (pid \(pid))" }
        let what = (slot ?? intendedSlot).map { "the \($0.rawValue) slot" } ?? "the app"
        return "\(what) (pid \(pid))"
    }
}
