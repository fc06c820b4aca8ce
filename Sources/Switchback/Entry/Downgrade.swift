#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract

/// The downgrade entry point (contract 2). The launcher calls it in a process of its own,
/// with the current slot loaded, before any switch to the previous slot: it undoes the
/// migrations the previous version cannot read, newest first, and reports what it did on
/// `reportFD` (the format is in switchback.h).
@_cdecl("switchback_downgrade")
public func _switchbackDowngrade(
    _ target: UnsafePointer<CChar>?,
    _ flags: UInt32,
    _ reportFD: Int32,
    _ context: UnsafePointer<SwitchbackContext>?
) -> Int32 {
    Downgrade(reportFD: reportFD).run(target: target.map { String(cString: $0) }, force: flags & SWITCHBACK_DOWNGRADE_FORCE != 0,
                                      context: context)
}

struct Downgrade {
    let reportFD: Int32

    /// How long the downgrade waits for running writers to release the data lock.
    static let lockWaitSeconds = 10.0

    func report(_ line: String) { SDKFiles.printError(line, to: reportFD) }

    func run(target: String?, force: Bool, context: UnsafePointer<SwitchbackContext>?) -> Int32 {
        // A downgrade serves nothing: it neither notifies nor touches inherited descriptors.
        let launch = LaunchInfo(arguments: [], context: context, service: .none)
        guard let app = RegisteredApp.current else {
            report("message=\(Runner.missingRegistration.dropFirst("Error: ".count))")
            return SWITCHBACK_DOWNGRADE_FAILED
        }
        guard let target, let version = try? Version(tolerant: target) else {
            report("message=The downgrade target \(target ?? "(none)") is not a version.")
            return SWITCHBACK_DOWNGRADE_FAILED
        }
        // No writer is half done while the data changes format (see LaunchInfo.withDataLock).
        var timedOut = false
        let lock = DataLock(dataDirectory: launch.dataDirectory, exclusive: true, waitSeconds: Self.lockWaitSeconds, timedOut: &timedOut)
        defer { withExtendedLifetime(lock) {} }
        if timedOut {
            report("message=the app's data is in use: a running process of the app has held \(launch.dataDirectory).lock for \(Int(Self.lockWaitSeconds)) s; stop it, then retry")
            return SWITCHBACK_DOWNGRADE_FAILED
        }
        let startup = DataStartup(launch: launch, app: app)
        do { try SDKFiles.makeDirectory(launch.dataDirectory) } catch {
            report("message=\(error.message)")
            return SWITCHBACK_DOWNGRADE_FAILED
        }
        let migrator: Migrator
        do { migrator = try startup.migrator() } catch {
            report("message=the app's migrations could not be registered: \(error)")
            return SWITCHBACK_DOWNGRADE_FAILED
        }
        defer { DataStatePublisher(launch: launch)?.publish(migrator) }
        do {
            let done = try migrator.downgrade(to: version, force: force)
            for action in done.recovered + done.actions {
                report("undone=\(action.method.rawValue)\t\(action.name)\t\(action.archive ?? "")")
            }
            report("reader_floor=\(done.readerFloorAfter.map { "\($0)" } ?? "")")
            return SWITCHBACK_DOWNGRADE_DONE
        } catch let error as AppVersionsError where error.code == .downgradeRefused {
            // The launcher's side says what to do (--force); say only what blocks it.
            report("message=\(DataStatePublisher.noWayBack([error.subject ?? "?"]))")
            return SWITCHBACK_DOWNGRADE_REFUSED
        } catch let error as AppVersionsError where error.code == .downgradeFailed && error.underlying != nil {
            // The launcher's side says that nothing switched and to run it again.
            report("message=undoing migration step \"\(error.subject ?? "?")\" failed: \(error.underlying!)")
            return SWITCHBACK_DOWNGRADE_FAILED
        } catch {
            report("message=\(error)")
            return SWITCHBACK_DOWNGRADE_FAILED
        }
    }
}
