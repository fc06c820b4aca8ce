#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Runs named migration steps once per scope, in version order, and records that they ran.
///
/// ```swift
/// var migrator = Migrator(store: FileLedgerStore(directory: dir))
/// migrator.registerFirstInstall("create-notes-store") { _ in try NotesStore.create() }
/// migrator.register("split-notes-by-day", at: "1.1.0") { _ in try NotesStore.splitByDay() }
/// migrator.registerEveryVersionChange("clear-caches") { _ in try Caches.clear() }
/// let report = try migrator.run(for: running)
/// ```
///
/// Guarantees (per scope):
/// - A version step runs at most once: after it succeeds its name is recorded and it
///   never runs again, even across downgrades and upgrades, unless
///   ``downgrade(to:force:scope:)`` undoes it; then the next upgrade runs it again.
/// - Version steps run in version order, then in registration order within a version,
///   whatever order they were registered in. Versions skipped by an update are caught up.
/// - A step for a version above the running one never runs.
/// - On a first install only the first-install steps run; the version steps up to the
///   running version are considered done, since a fresh install starts with data in
///   the current format. Steps above it run as the app is later upgraded.
/// - The end of a step is recorded in one atomic write right after it returns. A step
///   the process died in is reported at the next run and runs again, with
///   ``MigrationContext/isRetryAfterInterruption`` set; so make steps safe to repeat.
/// - A throwing step with the ``MigrationStep/ErrorPolicy/stop`` policy stops the run
///   and is retried on the next start; with ``MigrationStep/ErrorPolicy/continue`` it is
///   recorded as failed and the run goes on.
/// - A launch that finds nothing to do reads the ledger and writes nothing.
/// - While steps run, a service manager's start deadline keeps moving: when `$NOTIFY_SOCKET`
///   is set (systemd `Type=notify`, or Switchback's supervisor), the run sends
///   `EXTEND_TIMEOUT_USEC=3000000` before the first step, then every second from a thread
///   of its own, until the last step ends; so a migration longer than the start timeout is
///   not killed half-way. The price: a step that hangs forever extends the deadline forever
///   too, and only a stop (or a kill) ends that start.
public struct Migrator {
    /// Where the migration record is kept.
    public let store: any LedgerStore

    /// Says, for a scope with no migration record yet, whether its data predates
    /// AppVersions and at which version: steps above that version then run, and
    /// first-install steps do not. Return nil for a genuinely new install.
    ///
    /// ```swift
    /// migrator.baseline = { _ in FileManager.default.fileExists(atPath: legacyDB) ? "1.4.0" : nil }
    /// ```
    ///
    /// Returning ``Version/zero`` for every scope makes a first install run every version
    /// step up to the running version, the YCIVersion behaviour.
    public var baseline: ((Scope) throws -> Version?)?

    /// The directory holding the app's data for ``Scope/app``, or nil (the default) for
    /// no snapshots. When set, each version step is preceded by a snapshot of this
    /// directory in ``snapshotDirectory`` (a full copy unless ``snapshotMethod`` says
    /// otherwise), so ``downgrade(to:force:scope:)`` can restore it for a step that has
    /// no ``MigrationStep/revert``. Other scopes use ``dataDirectoryForScope`` if set.
    public var dataDirectory: String?
    /// The data directory of a scope other than ``Scope/app``; nil for none.
    public var dataDirectoryForScope: ((Scope) -> String?)?
    /// Where snapshots and archives go; nil (the default) means `snapshots` inside a
    /// ``FileLedgerStore``'s directory, or `<dataDirectory>.appversions` beside the data.
    public var snapshotDirectory: String?
    /// Which files a snapshot hard-links instead of copying; ``SnapshotMethod/copy`` (the
    /// default) copies them all. Applies to every scope's data directory, with paths
    /// relative to it.
    ///
    /// Link only files that are replaced (written anew, then renamed over), never
    /// modified in place: a linked file is shared with the snapshot, so an in-place
    /// change would reach the snapshot too.
    ///
    /// ```swift
    /// migrator.snapshotMethod = .hardLink(where: { $0.hasPrefix("attachments/") })
    /// ```
    public var snapshotMethod: SnapshotMethod = .copy

    var steps: [MigrationStep] = []
    private var names: Set<String> = []
    let now: @Sendable () -> Date
    /// How ``run(for:scope:)`` extends the start deadline; nil: `$NOTIFY_SOCKET`'s, read only
    /// when steps are due (tests give their own socket and period).
    var startDeadline: StartDeadlineExtender.Settings?

    /// Creates a migrator with no steps.
    ///
    /// - Parameters:
    ///   - store: Where the migration record is kept, usually the same store as the history's.
    ///   - now: The clock; tests pass a fixed date.
    public init(store: any LedgerStore, now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.now = now
    }

    /// The names of the registered steps, in registration order.
    public var stepNames: [String] { steps.map(\.name) }

    /// Registers a step.
    ///
    /// Traps if a step with the same name is already registered, or the name is empty:
    /// names identify steps in the ledger, so a duplicate is a programmer mistake.
    public mutating func register(_ step: MigrationStep) {
        // fatalError, not precondition: -O builds drop a precondition's message.
        if step.name.isEmpty { fatalError("A migration step was registered with an empty name; give every step a unique name.") }
        guard names.insert(step.name).inserted else {
            fatalError("Migration step \"\(step.name)\" is registered twice; give every step a unique name.")
        }
        steps.append(step)
    }

    /// Registers a step that runs once when the scope's data reaches `version`.
    ///
    /// Traps if `name` is already registered.
    /// `readerFloor` is the oldest version that can still read the data after the step
    /// (nil: the step's own version); `revert` undoes it for a downgrade and must be
    /// safe to repeat.
    public mutating func register(
        _ name: String,
        at version: Version,
        readerFloor: Version? = nil,
        revert: ((MigrationContext) throws -> Void)? = nil,
        onError errorPolicy: MigrationStep.ErrorPolicy = .stop,
        _ body: @escaping (MigrationContext) throws -> Void
    ) {
        register(MigrationStep(name, trigger: .version(version), readerFloor: readerFloor, revert: revert, onError: errorPolicy, body))
    }

    /// Registers a step that runs once, on the scope's first install, to create its data.
    ///
    /// Traps if `name` is already registered.
    public mutating func registerFirstInstall(
        _ name: String,
        onError errorPolicy: MigrationStep.ErrorPolicy = .stop,
        _ body: @escaping (MigrationContext) throws -> Void
    ) {
        register(MigrationStep(name, trigger: .firstInstall, onError: errorPolicy, body))
    }

    /// Registers a step that runs whenever the version or build differs from the last
    /// one migrated in the scope (not on a first install).
    ///
    /// Traps if `name` is already registered.
    public mutating func registerEveryVersionChange(
        _ name: String,
        onError errorPolicy: MigrationStep.ErrorPolicy = .stop,
        _ body: @escaping (MigrationContext) throws -> Void
    ) {
        register(MigrationStep(name, trigger: .everyVersionChange, onError: errorPolicy, body))
    }

    /// Works out what ``run(for:scope:)`` would do, without running or writing anything:
    /// which steps are due, in the order they would run, and who can read the data after each
    /// (``MigrationPlan/pending``).
    ///
    /// Read-only: it reads the ledger and takes no lock, no snapshot and no write, so it may
    /// run while another process of the app (another release, say) uses the data. Calls
    /// ``baseline`` if the scope has no migration record. An undo that an interrupted
    /// downgrade left open, which `run` finishes first, counts as finished: the steps it
    /// undoes are planned as due again.
    ///
    /// - Throws: ``AppVersionsError`` if the ledger cannot be read or the baseline throws.
    public func plan(for running: RunningVersion, scope: Scope = .app) throws -> MigrationPlan {
        var ledger = try store.ledger(for: scope)
        // `run` finishes these before it decides (recoverInterruptedUndos); in memory only here.
        for undo in ledger.openUndos {
            ledger.apply(.undone(name: undo.name, method: undo.method, archive: undo.archive, date: now()))
        }
        let decision = try decide(running, scope: scope, ledger: ledger)
        return MigrationPlan(
            scope: scope,
            running: running,
            previous: decision.previous,
            isFirstInstall: decision.isFirstInstall,
            baseline: decision.adoptedBaseline,
            steps: decision.steps.map { steps[$0].name },
            interrupted: ledger.open,
            isUpToDate: decision.steps.isEmpty && !decision.recordsVersion,
            pending: decision.steps.map { pendingStep(steps[$0], running: running) }
        )
    }

    /// A due step as the plan reports it, with the reader floor the data has after it.
    func pendingStep(_ step: MigrationStep, running: RunningVersion) -> MigrationPlan.Step {
        switch step.trigger {
        case .version(let version):
            return MigrationPlan.Step(name: step.name, trigger: step.trigger, readerFloor: step.readerFloor ?? version)
        case .firstInstall:
            // The install creates the data in the running version's format: the steps up to
            // it count as applied, so their floors are the data's (none registered: the
            // running version itself, the conservative answer).
            let covered = steps.compactMap { other in other.version.flatMap { $0 <= running.version ? other.readerFloor ?? $0 : nil } }
            return MigrationPlan.Step(name: step.name, trigger: step.trigger, readerFloor: covered.max() ?? running.version)
        case .everyVersionChange:
            return MigrationPlan.Step(name: step.name, trigger: step.trigger, readerFloor: nil)
        }
    }

    /// Runs every step that is due in `scope` for the `running` version, recording each.
    ///
    /// Holds the store's exclusive access to the scope for the whole run, so a second
    /// process starting at the same time waits and then finds the work done.
    ///
    /// When steps are due and `$NOTIFY_SOCKET` is set, keeps the service manager's start
    /// deadline 5 s ahead, every second, until the steps end (see the type's guarantees): a
    /// slow migration is never killed for its slowness, and a hung one is never killed for
    /// the start timeout either.
    ///
    /// - Returns: What ran, what failed under the `continue` policy, and which steps a
    ///   previous run left interrupted.
    /// - Throws: ``AppVersionsError`` with ``AppVersionsError/Code/stepFailed`` when a
    ///   step with the `stop` policy throws (its own error is in
    ///   ``AppVersionsError/underlying``), or a storage error.
    @discardableResult
    public func run(for running: RunningVersion, scope: Scope = .app) throws -> MigrationReport {
        try store.exclusively(scope) {
            let recovered = try recoverInterruptedUndos(scope: scope, running: running)
            let ledger = try store.ledger(for: scope)
            let decision = try decide(running, scope: scope, ledger: ledger)
            var report = MigrationReport(
                scope: scope,
                running: running,
                previous: decision.previous,
                isFirstInstall: decision.isFirstInstall,
                baseline: decision.adoptedBaseline,
                ran: [],
                failed: [],
                interrupted: ledger.open
            )
            report.recoveredUndos = recovered
            // Each write carries the end of the previous step and the start of the next,
            // so a step costs one atomic write, and a step's end is durable before the
            // next one begins.
            var pending: [LedgerRecord] = []
            if let baseline = decision.adoptedBaseline {
                pending.append(.initialized(floor: baseline, isBaseline: true, date: now()))
            }
            let interruptedNames = Set(ledger.open.map(\.name))
            let extender = decision.steps.isEmpty ? nil : StartDeadlineExtender.start(startDeadline ?? .fromEnvironment)
            defer { extender?.stop() }
            for index in decision.steps {
                let step = steps[index]
                let context = MigrationContext(
                    step: step.name,
                    scope: scope,
                    running: running,
                    previous: decision.previous,
                    isFirstInstall: decision.isFirstInstall,
                    isRetryAfterInterruption: interruptedNames.contains(step.name)
                )
                // A retried step keeps the snapshot taken before its first attempt: a new
                // one would capture its half-done work.
                let keepsSnapshot = interruptedNames.contains(step.name) && ledger.snapshots[step.name] != nil
                var superseded: String?
                if step.version != nil, !keepsSnapshot, let snapshot = try takeSnapshot(before: step.name, scope: scope) {
                    pending.append(.snapshot(name: step.name, path: snapshot, date: now()))
                    superseded = ledger.snapshots[step.name]
                }
                pending.append(.stepBegan(name: step.name, running: running, date: now()))
                try store.append(records: pending, to: scope)
                // The step runs again (after a downgrade undid it): only its newest snapshot
                // can ever be restored, so the one before goes. Archives are never touched.
                if let superseded { try? DataSnapshots.removeTree(superseded) }
                pending = [try perform(step, context: context, report: &report)]
            }
            if decision.isFirstInstall {
                pending.append(.initialized(floor: running.version, isBaseline: false, date: now()))
            }
            if decision.recordsVersion {
                pending.append(.migrated(running, date: now()))
            }
            if !pending.isEmpty {
                try store.append(records: pending, to: scope)
            }
            return report
        }
    }

    /// Forgets the migration record of `scope` (not its version history), so every step
    /// is due again as on a first install. Meant for tests and debugging.
    ///
    /// - Throws: ``AppVersionsError`` if the ledger cannot be written.
    public func reset(scope: Scope = .app) throws {
        try store.exclusively(scope) {
            try store.append(records: [.reset(date: now())], to: scope)
        }
    }

    // MARK: Deciding

    /// The steps due, by index into `steps`, and what the run records.
    struct Decision {
        var steps: [Int]
        var isFirstInstall: Bool
        var adoptedBaseline: Version?
        var previous: RunningVersion?
        var recordsVersion: Bool
    }

    func decide(_ running: RunningVersion, scope: Scope, ledger: Ledger) throws -> Decision {
        var floor = ledger.floor
        var previous = ledger.lastMigrated
        var adoptedBaseline: Version? = nil
        if floor == nil {
            let declared: Version?
            do {
                declared = try baseline?(scope)
            } catch {
                throw AppVersionsError(
                    .stepFailed,
                    "The migrator's baseline for scope \"\(scope.name)\" threw \(error); fix the check for legacy data and start again.",
                    subject: scope.name, underlying: error
                )
            }
            guard let declared else {
                let due = steps.indices.filter { steps[$0].trigger == .firstInstall && ledger.finished[steps[$0].name] == nil }
                return Decision(steps: due, isFirstInstall: true, adoptedBaseline: nil, previous: nil, recordsVersion: true)
            }
            floor = declared
            adoptedBaseline = declared
            previous = previous ?? RunningVersion(version: declared)
        }
        let lowest = floor!
        var due: [(index: Int, version: Version)] = []
        var hooks: [Int] = []
        let versionChanged = ledger.lastMigrated.map { !$0.isIdentical(to: running) } ?? true
        for index in steps.indices {
            let step = steps[index]
            switch step.trigger {
            case .version(let version):
                if (lowest < version || ledger.undone.contains(step.name)) && version <= running.version && ledger.finished[step.name] == nil {
                    due.append((index, version))
                }
            case .everyVersionChange:
                if versionChanged && !(ledger.endedSinceMigrated[step.name]?.isIdentical(to: running) ?? false) {
                    hooks.append(index)
                }
            case .firstInstall:
                break
            }
        }
        due.sort { $0.version < $1.version || ($0.version == $1.version && $0.index < $1.index) }
        return Decision(
            steps: due.map(\.index) + hooks,
            isFirstInstall: false,
            adoptedBaseline: adoptedBaseline,
            previous: previous,
            recordsVersion: versionChanged
        )
    }

    // MARK: Running

    /// Runs one step whose start is already recorded; returns the record of its end,
    /// which the caller writes with the next step's start. A `stop` failure is written
    /// at once, then thrown.
    private func perform(_ step: MigrationStep, context: MigrationContext, report: inout MigrationReport) throws -> LedgerRecord {
        let running = context.running
        do {
            try step.body(context)
        } catch {
            let message = "\(error)"
            let date = now()
            switch step.errorPolicy {
            case .stop:
                // If even this write fails, the next run reports the step as interrupted.
                try? store.append(
                    records: [.stepEnded(name: step.name, running: running, date: date, outcome: .abandoned(message))],
                    to: context.scope
                )
                throw AppVersionsError(
                    .stepFailed,
                    "Migration step \"\(step.name)\" failed in scope \"\(context.scope.name)\" with \(message); fix the cause and start the app again to retry it.",
                    subject: step.name, underlying: error
                )
            case .continue:
                report.failed.append(FailedStep(name: step.name, message: message, date: date, isRetried: false))
                return .stepEnded(name: step.name, running: running, date: date, outcome: .failed(message))
            }
        }
        report.ran.append(step.name)
        return .stepEnded(name: step.name, running: running, date: now(), outcome: .succeeded)
    }
}
