#if canImport(Glibc)
import Glibc
#endif
import AppVersions
import SwitchbackContract

// The downgrade entry point (contract 2). Keep it when you replace the sample app, with
// your own migrator: the launcher calls it, in a process of its own, before any switch to
// the previous slot, so that the previous build can read the data.

/// Undoes the migrations the previous version cannot read, newest first, and reports
/// what it did on `reportFD` (the format is in switchback.h).
@_cdecl("switchback_downgrade")
public func switchbackDowngrade(
    _ target: UnsafePointer<CChar>?,
    _ flags: UInt32,
    _ reportFD: Int32,
    _ context: UnsafePointer<SwitchbackContext>?
) -> Int32 {
    let launch = LaunchInfo(context)
    func report(_ line: String) {
        var text = line + "\n"
        _ = text.withUTF8 { write(reportFD, $0.baseAddress, $0.count) }
    }
    guard let target, let version = try? Version(tolerant: String(cString: target)) else {
        report("message=The downgrade target \(target.map { String(cString: $0) } ?? "(none)") is not a version.")
        return SWITCHBACK_DOWNGRADE_FAILED
    }
    // No note command is half done while the data changes format (see DataLock).
    let lock = DataLock(dataDirectory: launch.dataDirectory, exclusive: true)
    defer { withExtendedLifetime(lock) {} }
    let startup = AppStartup(launch: launch)
    makeDirectory(launch.dataDirectory)
    let migrator = startup.migrator(store: FileLedgerStore(directory: startup.ledgerDirectory),
                                    notes: NotesStore(directory: launch.dataDirectory))
    defer { DataStatePublisher(launch: launch)?.publish(migrator) }
    do {
        let done = try migrator.downgrade(to: version, force: flags & SWITCHBACK_DOWNGRADE_FORCE != 0)
        for action in done.recovered + done.actions {
            report("undone=\(action.method.rawValue)\t\(action.name)\t\(action.archive ?? "")")
        }
        report("reader_floor=\(done.readerFloorAfter.map { "\($0)" } ?? "")")
        return SWITCHBACK_DOWNGRADE_DONE
    } catch let error as AppVersionsError where error.code == .downgradeRefused {
        // The launcher's side says what to do (--force); say only what blocks it.
        report("message=migration step \"\(error.subject ?? "?")\" has neither a revert nor a snapshot to undo it with")
        return SWITCHBACK_DOWNGRADE_REFUSED
    } catch let error as AppVersionsError where error.code == .downgradeFailed && error.underlying != nil {
        // The launcher's side says that nothing switched and to run it again.
        report("message=undoing migration step \"\(error.subject ?? "?")\" failed: \(error.underlying!)")
        return SWITCHBACK_DOWNGRADE_FAILED
    } catch let error as AppVersionsError {
        report("message=\(error.description)")
        return SWITCHBACK_DOWNGRADE_FAILED
    } catch {
        report("message=\(error)")
        return SWITCHBACK_DOWNGRADE_FAILED
    }
}
