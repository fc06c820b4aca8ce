/// One start of one build, for automatic rollback: uses a try before the entry point runs,
/// and turns the app's good mark (or exit code 0) into a durable verdict.
public final class StartSession: @unchecked Sendable {
    let store: HealthStore
    let build: BuildIdentity
    let tries: Int
    private var isGood: Bool

    init(store: HealthStore, build: BuildIdentity, tries: Int, known: SlotHealth) {
        self.store = store
        self.build = build
        self.tries = tries
        self.isGood = known.isGood || known.isBad
    }

    /// Uses one try of an on-trial build, under the lock, without fsync (a decrement lost to
    /// a power cut only gives the build one more try). Good and bad builds write nothing.
    /// When launchers race for the last try, the counter stays at zero and the next start
    /// marks the build bad. Returns the error when the try could not be recorded (a full
    /// disk, a read-only state directory): the build still runs, and the caller says so.
    func begin() -> SwitchbackError? {
        guard !isGood else { return nil }
        do {
            try store.update(durable: false) { (record: inout HealthRecord) throws(SwitchbackError) in
                var health = record.health(of: build, tries: tries)
                if case .trial(let left) = health.verdict {
                    health.verdict = .trial(triesLeft: max(0, left - 1))
                    health.failedStarts = min(health.failedStarts, ValueRange.count.upperBound - 1) + 1
                    health.changedAt = currentUnixTime()
                }
                record.set(health)
            }
            return nil
        } catch {
            return error
        }
    }

    /// Marks this build good, durably, once. Returns 0, or -1 when it could not be written.
    @discardableResult
    public func markGood(note: String) -> Int32 {
        if isGood { return 0 }
        do {
            try store.update(durable: true) { (record: inout HealthRecord) throws(SwitchbackError) in
                record.mark(build, .good, tries: tries, note: note, at: currentUnixTime())
            }
            isGood = true
            return 0
        } catch {
            return -1
        }
    }
}
