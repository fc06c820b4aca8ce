#if canImport(Glibc)
import Glibc
#endif
import AppVersions

/// What every start of the sample app does first: record the version in its history and
/// run the data migrations that are due, with AppVersions. And what the launcher's
/// downgrade calls (see Downgrade.swift): the same steps, undone newest first.
struct AppStartup {
    let launch: LaunchInfo

    /// Where AppVersions keeps its ledger (and its snapshots, under `snapshots/`): beside
    /// the data directory, never inside it, so that restoring a snapshot of the data
    /// cannot roll the ledger back with it.
    var ledgerDirectory: String { launch.dataDirectory + ".versions" }

    /// `SAMPLE_NO_REVERT=1` registers `notes-v2` without its revert, to demonstrate the
    /// fallback: a rollback restores the snapshot taken before the step and archives the
    /// newer data.
    static var registersReverts: Bool { getenv("SAMPLE_NO_REVERT").map { String(cString: $0) } != "1" }

    /// The steps of the sample app, in one place.
    func migrator(store: FileLedgerStore, notes: NotesStore) -> Migrator {
        var migrator = Migrator(store: store)
        migrator.dataDirectory = launch.dataDirectory
        // Full copies, not hard links: `note add` appends to notes.v2 in place, so a linked
        // snapshot would change with every later note.
        migrator.snapshotMethod = .copy
        // Installs from before 1.2.0 did not track versions; their notes.txt says 1.1.0.
        migrator.baseline = { _ in fileExists(notes.legacyPath) ? Version(1, 1, 0) : nil }
        migrator.registerFirstInstall("create-notes-store") { _ in
            guard notes.create() else { throw SampleError("cannot create \(notes.path)") }
        }
        // Format 2 can be read by 1.2.0 and later only (the reader floor); its revert
        // writes format 1 back, for 1.1.0.
        let revert: ((MigrationContext) throws -> Void)? = Self.registersReverts ? { _ in
            guard notes.revertToFormat1() else { throw SampleError("cannot convert \(notes.path) back to \(notes.legacyPath)") }
        } : nil
        migrator.register("notes-v2", at: "1.2.0", readerFloor: "1.2.0", revert: revert) { _ in
            guard notes.migrateFromFormat1() else { throw SampleError("cannot convert \(notes.legacyPath) to \(notes.path)") }
        }
        return migrator
    }

    /// Records this start and migrates. Returns how this version relates to the last one
    /// that ran ("first run", "upgraded from 1.1.0", ...), or throws with a sentence.
    func run() throws -> String {
        let running = RunningVersion(version: try Version(tolerant: launch.version), build: launch.build)
        makeDirectory(launch.dataDirectory)
        let store = FileLedgerStore(directory: ledgerDirectory)
        let notes = NotesStore(directory: launch.dataDirectory)
        let hadLegacyData = fileExists(notes.legacyPath)
        let started = try VersionTracker(store: store).record(running, slot: launch.slot)
        let published = DataStatePublisher(launch: launch)
        // Steps may be due: what was published may stop being true part-way.
        if started.changeState != .notChanged { published?.withdraw() }
        let migrator = migrator(store: store, notes: notes)
        let report = try migrator.run(for: running)
        if let published, started.changeState != .notChanged || !report.ran.isEmpty
            || !report.recoveredUndos.isEmpty || !published.exists {
            published.publish(migrator)
        }
        switch started.changeState {
        case .installed: return hadLegacyData ? "upgraded from 1.1.0" : "first run"
        case .notChanged: return "welcome back"
        case .updated: return "updated to build \(launch.build)"
        case .upgraded(let from): return "upgraded from \(from.version)"
        case .downgraded(let from): return "downgraded from \(from.version)"
        }
    }
}

struct SampleError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }
