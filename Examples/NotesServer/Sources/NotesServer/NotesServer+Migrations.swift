import Switchback

extension NotesServer {
    /// The data's migrations. The SDK runs the due ones before `main` (under the data lock a
    /// rollback's downgrade takes), and a rollback to a version that cannot read the data
    /// runs their reverts, newest first, before it switches slots.
    ///
    /// A first install creates the store in today's format (format 2) and counts the version
    /// steps up to the running version as done. The step `notes-v2` runs only for data from
    /// before 1.0.0: the 0.9 previews kept `notes.txt` (format 1) and had no migration
    /// ledger, which the baseline recognises.
    public static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {
        let notes = NotesStore(directory: launch.dataDirectory)
        migrator.baseline = { _ in fileExists(notes.legacyPath) ? "0.9.0" : nil }
        migrator.registerFirstInstall("create-notes") { _ in try notes.create() }
        // Format 2 can be read by 1.0.0 and later only (the reader floor); the revert writes
        // format 1 back for a 0.9 preview. POST /notes appends to notes.v2 in place, so the
        // snapshot the migrator takes before the step is a full copy (the default).
        migrator.register("notes-v2", at: "1.0.0", readerFloor: "1.0.0", revert: { _ in try notes.revertToFormat1() }) { _ in
            try notes.migrateFromFormat1()
        }
    }
}
