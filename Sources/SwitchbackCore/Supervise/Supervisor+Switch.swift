#if canImport(Glibc)
import Glibc
#endif

/// The stop-first switch's I/O: the switch `Switcher.perform` hands over (`switch.request`),
/// run here once no child of the current build serves, and its answer (`switch.answer`).
extension Supervisor {
    /// `switch.request`: read, removed, handed to the machine when one child serves (a switch
    /// already under way leaves it for later: the requester waits) or run at once when none does.
    func consumeSwitchRequest() {
        guard trusted else { return }
        let path = SwitchRequest.path(in: directory)
        guard let bytes = try? FileSystem.read(path, limit: 64 << 10) else { return }
        let idle: Bool
        switch machine.state {
        case .running: idle = false
        case .backingOff, .idle: idle = true
        default: return
        }
        try? FileSystem.remove(path)
        let request: SwitchRequest
        do { request = try SwitchRequest.parse(bytes, path: path) } catch {
            Launcher.printError("launcher: supervisor: \(error.message)")
            return
        }
        guard request.fromBuild == manifest.current.sha256 else {
            answer(.init(id: request.id, status: "refused", message: "The switch was requested for another bundle (current build \(request.fromBuild.prefix(12))) than the one this supervisor runs (\(manifest.current.sha256.prefix(12))); nothing was changed: run the command again."))
            return
        }
        if idle {
            convert(request)
            return
        }
        // Asked again here: the data may have been converted since the requester asked.
        send(.switchRequested(request, path: Switcher(bundleRoot: bundleRoot, manifest: manifest, directory: directory).pathBack()))
    }

    /// Runs the switch to the previous slot (no child of the current build serves now),
    /// answers the requester, and tells the machine.
    func convert(_ request: SwitchRequest) {
        var failure: String?
        let switcher = Switcher(bundleRoot: bundleRoot, manifest: manifest, directory: directory)
        do {
            let result = try switcher.perform(rollback: true, source: request.source, reason: request.reason, force: request.force,
                                              command: request.command, handsOff: false)
            failure = result.refusal
            answer(.init(id: request.id, status: result.refusal == nil ? "switched" : "refused", message: result.refusal,
                         warning: result.warning, changed: result.switched?.changed ?? false,
                         damagedFileMovedTo: result.switched?.damagedFileMovedTo, downgrade: result.downgrade))
        } catch {
            failure = error.message
            answer(.init(id: request.id, status: "error", message: error.message, errorCode: error.code.rawValue))
        }
        if let failure, request.id.hasPrefix(Self.ownRequestPrefix) {
            Launcher.printError("launcher: supervisor: \(request.reason ?? "the switch to the previous slot"), but it stays: \(failure)")
        }
        send(.converted(failure: failure.map { $0.hasSuffix(".") ? String($0.dropLast()) : $0 }))
    }

    /// Requests the supervisor makes itself (a failed bake window, `rollbackctl abort`) get no answer file.
    static let ownRequestPrefix = "supervisor-"

    func answer(_ answer: SwitchRequest.Answer) {
        guard !answer.id.hasPrefix(Self.ownRequestPrefix) else { return }
        do { try FileSystem.replace(SwitchRequest.Answer.path(in: directory), with: answer.serialized(), durable: false) } catch {
            Launcher.printError("launcher: supervisor: the answer to a switch request could not be written (\(error.message)).")
        }
    }
}
