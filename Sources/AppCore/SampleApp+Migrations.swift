#if canImport(Glibc)
import Glibc
#endif
import Switchback

extension SampleApp {
    /// `SAMPLE_NO_REVERT=1` registers `notes-v2` without its revert, to demonstrate the
    /// fallback: a rollback restores the snapshot taken before the step and archives the
    /// newer data.
    static var registersReverts: Bool { getenv("SAMPLE_NO_REVERT").map { String(cString: $0) } != "1" }

    /// `SAMPLE_SLOW_MIGRATION_MS=<n>` makes the step this start runs for its version change
    /// sleep n ms first: `create-notes-store` on a fresh install, `notes-v2` on the upgrade
    /// from 1.1.0 (never both in one start). For a start longer than a deadline; the SDK keeps
    /// extending it meanwhile.
    static func sleepIfSlowMigration() throws {
        guard let value = getenv("SAMPLE_SLOW_MIGRATION_MS").map({ String(cString: $0) }) else { return }
        guard let milliseconds = Int(value), milliseconds >= 0 else {
            throw SampleError("SAMPLE_SLOW_MIGRATION_MS wants a number of milliseconds, not '\(value)'")
        }
        sleep(milliseconds: milliseconds)
    }

    /// A file `fail-migration` in the data directory naming a version makes `notes-v2` fail
    /// (after the SDK took its snapshot, before it converts anything) in the build of that
    /// version: a migration that fails, for the stop-first switch's failure tests. A file, not
    /// the environment, so that a test can arm it after the supervisor started (the earlier
    /// starts of that version must migrate).
    static func failIfAsked(_ launch: LaunchInfo) throws {
        let path = launch.dataDirectory + "/fail-migration"
        guard let named = readLinesIfReadable(path)?.first, named == launch.version else { return }
        throw SampleError("notes-v2 fails on purpose (\(path) names \(named))")
    }

    /// The sample's data migrations. The SDK runs the due ones before `main`, and undoes
    /// them, newest first, when a rollback needs the data in an older format. A build below
    /// 1.2.0 creates a format-1 store and never runs `notes-v2` (a step above its version).
    public static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {
        let notes = NotesStore(directory: launch.dataDirectory, version: launch.version)
        let format2 = NotesStore(directory: launch.dataDirectory, format: 2)
        // Full copies, not hard links: `note add` appends to notes.v2 in place, so a linked
        // snapshot would change with every later note.
        migrator.snapshotMethod = .copy
        // Installs from before 1.2.0 did not track versions; their notes.txt says 1.1.0.
        migrator.baseline = { _ in fileExists(notes.legacyPath) ? Version(1, 1, 0) : nil }
        migrator.registerFirstInstall("create-notes-store") { _ in
            try sleepIfSlowMigration()
            guard notes.create() else { throw SampleError("cannot create \(notes.path)") }
        }
        // Format 2 can be read by 1.2.0 and later only (the reader floor); its revert
        // writes format 1 back, for 1.1.0.
        let revert: ((MigrationContext) throws -> Void)? = registersReverts ? { _ in
            guard format2.revertToFormat1() else { throw SampleError("cannot convert \(notes.path) back to \(notes.legacyPath)") }
        } : nil
        migrator.register("notes-v2", at: "1.2.0", readerFloor: "1.2.0", revert: revert) { _ in
            try sleepIfSlowMigration()
            try failIfAsked(launch)
            guard format2.migrateFromFormat1() else { throw SampleError("cannot convert \(notes.legacyPath) to \(notes.path)") }
        }
        try registerExpandStepIfAsked(&migrator, launch: launch)
    }

    /// `SAMPLE_EXPAND_STEP=VERSION[:FLOOR]` registers an expand step at VERSION, `notes-index`:
    /// it writes `notes.index` beside the notes, a file no build reads, so every build still
    /// reads the data after it. With FLOOR (the version before, say) the step declares so, and
    /// a live switch to VERSION stays start-first; without, its own version is its floor and
    /// the switch goes stop-first (docs/AppVersions.md, "What a build reports before a switch").
    static func registerExpandStepIfAsked(_ migrator: inout Migrator, launch: LaunchInfo) throws {
        guard let value = getenv("SAMPLE_EXPAND_STEP").map({ String(cString: $0) }) else { return }
        let parts = value.split(separator: ":", maxSplits: 1).map(String.init)
        guard let version = try? Version(parsing: parts[0]) else {
            throw SampleError("SAMPLE_EXPAND_STEP wants VERSION[:FLOOR], not '\(value)'")
        }
        var floor: Version?
        if parts.count > 1 {
            guard let parsed = try? Version(parsing: parts[1]) else { throw SampleError("SAMPLE_EXPAND_STEP's floor is not a version: '\(parts[1])'") }
            floor = parsed
        }
        let index = launch.dataDirectory + "/notes.index"
        let notes = NotesStore(directory: launch.dataDirectory, version: launch.version)
        migrator.register("notes-index", at: version, readerFloor: floor, revert: { _ in _ = unlink(index) }) { _ in
            guard replaceFile(index, with: "\(notes.list().count)\n") else { throw SampleError("cannot write \(index)") }
        }
    }

    /// `note` commands write the data and exit: they hold the data lock for their whole
    /// run, so a rollback's downgrade never converts the notes under a half-done `note add`.
    public static func holdsDataLock(_ launch: LaunchInfo) -> Bool { launch.arguments.first == "note" }

    /// How this version relates to the last one that ran, for the greeting.
    static func change(_ launch: LaunchInfo) -> String {
        switch launch.versionChange {
        case .installed:
            return launch.migrationReport?.baseline.map { "upgraded from \($0)" } ?? "first run"
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
