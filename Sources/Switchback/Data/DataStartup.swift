/// What every start does before the app's `main`: record the version in the app's history
/// and run the migrations that are due, with AppVersions; and the migrator the downgrade
/// entry point undoes them with.
struct DataStartup {
    let launch: LaunchInfo
    let app: RegisteredApp

    /// Where AppVersions keeps its ledger (and its snapshots, under `snapshots/`): beside the
    /// data directory, never inside it, so restoring a snapshot of the data cannot roll the
    /// ledger back with it.
    var ledgerDirectory: String { launch.dataDirectory + ".versions" }

    func migrator() throws -> Migrator {
        var migrator = Migrator(store: FileLedgerStore(directory: ledgerDirectory))
        migrator.dataDirectory = launch.dataDirectory
        try app.migrations(&migrator, launch)
        return migrator
    }

    /// Records this start and migrates; returns how this version relates to the last one,
    /// and what the migrations did.
    func run() throws -> (ChangeState, MigrationReport) {
        let running = RunningVersion(version: try Version(tolerant: launch.version), build: launch.build)
        try SDKFiles.makeDirectory(launch.dataDirectory)
        let store = FileLedgerStore(directory: ledgerDirectory)
        let started = try VersionTracker(store: store).record(running, slot: launch.slot?.rawValue)
        let published = DataStatePublisher(launch: launch)
        // Steps may be due: what was published may stop being true part-way.
        if started.changeState != .notChanged { published?.withdraw() }
        let migrator = try migrator()
        let report = try migrator.run(for: running)
        if let published, started.changeState != .notChanged || !report.ran.isEmpty
            || !report.recoveredUndos.isEmpty || !published.exists {
            published.publish(migrator)
        }
        return (started.changeState, report)
    }
}
