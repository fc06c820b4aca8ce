#if canImport(Glibc)
import Glibc
#endif
import AppVersions

/// What every start of the sample app does first: record the version in its history and
/// run the data migrations that are due, with AppVersions.
struct AppStartup {
    let launch: LaunchInfo

    /// The steps of the sample app, in one place.
    func migrator(store: FileLedgerStore, notes: NotesStore) -> Migrator {
        var migrator = Migrator(store: store)
        // Installs from before 1.2.0 did not track versions; their notes.txt says 1.1.0.
        migrator.baseline = { _ in fileExists(notes.legacyPath) ? Version(1, 1, 0) : nil }
        migrator.registerFirstInstall("create-notes-store") { _ in
            guard notes.create() else { throw SampleError("cannot create \(notes.path)") }
        }
        migrator.register("notes-v2", at: "1.2.0") { _ in
            guard notes.migrateFromFormat1() else { throw SampleError("cannot convert \(notes.legacyPath) to \(notes.path)") }
        }
        return migrator
    }

    /// Records this start and migrates. Returns how this version relates to the last one
    /// that ran ("first run", "upgraded from 1.1.0", ...), or throws with a sentence.
    func run() throws -> String {
        let running = RunningVersion(version: try Version(tolerant: launch.version), build: launch.build)
        makeDirectory(launch.dataDirectory)
        let store = FileLedgerStore(directory: launch.dataDirectory + "/.versions")
        let notes = NotesStore(directory: launch.dataDirectory)
        let hadLegacyData = fileExists(notes.legacyPath)
        let started = try VersionTracker(store: store).record(running, slot: launch.slot)
        _ = try migrator(store: store, notes: notes).run(for: running)
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
