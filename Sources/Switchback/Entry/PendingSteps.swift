import CSwitchbackContract

/// The planning entry point (contract 2, optional). The launcher calls it in a process of its
/// own, with this slot loaded, before a live switch starts it beside the serving build: it
/// reports the migration steps this build would run at its start, with the reader floor each
/// leaves, on `reportFD` (the format is in switchback.h). It runs none of them and writes
/// nothing: no data lock, no directory, no ledger entry, no snapshot, no data state.
@_cdecl("switchback_pending_steps")
public func _switchbackPendingSteps(_ reportFD: Int32, _ context: UnsafePointer<SwitchbackContext>?) -> Int32 {
    PendingStepsReport(reportFD: reportFD).run(context: context)
}

struct PendingStepsReport {
    let reportFD: Int32

    func report(_ line: String) { SDKFiles.printError(line, to: reportFD) }

    func run(context: UnsafePointer<SwitchbackContext>?) -> Int32 {
        // Planning serves nothing: it neither notifies nor touches inherited descriptors.
        let launch = LaunchInfo(arguments: [], context: context, service: .none)
        guard let app = RegisteredApp.current else {
            report("message=\(Runner.missingRegistration.dropFirst("Error: ".count))")
            return SWITCHBACK_PENDING_STEPS_FAILED
        }
        let plan: MigrationPlan
        do {
            let running = RunningVersion(version: try Version(tolerant: launch.version), build: launch.build)
            // The migrator a start builds (store, data directory, the app's steps and
            // baseline); `plan` only reads the ledger.
            plan = try DataStartup(launch: launch, app: app).migrator().plan(for: running)
        } catch {
            report("message=the migrations of version \(launch.version) could not be planned in \(launch.dataDirectory): \(error)")
            return SWITCHBACK_PENDING_STEPS_FAILED
        }
        for step in plan.pending {
            let version: String
            if case .version(let stepVersion) = step.trigger { version = "\(stepVersion)" } else { version = "" }
            report(Self.line(name: step.name, version: version, readerFloor: step.readerFloor.map { "\($0)" } ?? ""))
        }
        return SWITCHBACK_PENDING_STEPS_DONE
    }

    /// `step <name> <version> <floor>`, each field encoded (see `encode`).
    static func line(name: String, version: String, readerFloor: String) -> String {
        "step \(encode(name)) \(encode(version)) \(encode(readerFloor))"
    }

    /// A field without spaces: `%`, space, bytes below 0x21 and 0x7F as `%XX`; empty as `-`,
    /// `-` itself as `%2D`. Written again here because the SDK links into every app's slot and
    /// SwitchbackCore (the launcher's library) does not belong there; `PendingSteps.decode` in
    /// SwitchbackCore reads what this writes, and the SDK's tests check the two agree.
    static func encode(_ field: String) -> String {
        if field.isEmpty { return "-" }
        if field == "-" { return "%2D" }
        let digits = Array("0123456789ABCDEF".utf8)
        var result: [UInt8] = []
        for byte in field.utf8 {
            if byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: "%") {
                result += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            } else {
                result.append(byte)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
