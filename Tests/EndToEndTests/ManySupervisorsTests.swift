import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 36, part 7: supervisors of one user started together, sharing the default TMPDIR
/// (/tmp), all live. Before, a supervisor's start-up clean-up removed any
/// `switchback-notify-*` directory without a socket, including one another supervisor had
/// just made and not yet bound: 1 to 4 of 400 exited at start. Now a directory goes only
/// when its owner's lock is free (ChildNotificationsCleanupTests), and one lost anyway is
/// made again.
///
/// One copy of the bundle (supervised by `SWITCHBACK_SUPERVISE=1`, the sample serving on
/// its own port), 400 state directories: what several apps or instances of one service
/// user on a host look like.
@Suite(.serialized) struct ManySupervisorsTests {
    static let count = 400

    @Test func fourHundredSupervisorsStartedAtOnceAllServe() throws {
        let t = try TestBundle()
        defer { try? FileManager.default.removeItem(atPath: t.directory) }
        var ports = Set<Int>()
        while ports.count < Self.count { ports.insert(try unusedLocalPort()) }
        let started = Date()
        var environment = ProcessInfo.processInfo.environment.filter { $0.key == "PATH" }
        environment["SWITCHBACK_SUPERVISE"] = "1"
        environment["TMPDIR"] = nil
        var instances: [(port: Int, state: String, stderr: String, process: SpawnedProcess)] = []
        defer {
            for instance in instances where !instance.process.hasExited { kill(instance.process.pid, SIGTERM) }
            for instance in instances { _ = instance.process.wait(upTo: 30) }
        }
        for (index, port) in ports.sorted().enumerated() {
            let state = t.directory + "/state-\(index)"
            let stderr = t.directory + "/supervisor-\(index).err"
            var own = environment
            own["SWITCHBACK_STATE_DIR"] = state
            let process = try SpawnedProcess(t.bundle + "/bin/launcher", ["serve", "--http", "127.0.0.1:\(port)"],
                                             environment: own, stderr: stderr)
            instances.append((port, state, stderr, process))
        }
        let spawned = Date().timeIntervalSince(started)

        var serving = Set<Int>()
        _ = waitUntil(seconds: 900) {
            for instance in instances where !serving.contains(instance.port) {
                if instance.process.hasExited { return true }  // reported below
                if HTTPPoller.request(port: instance.port, path: "/", timeout: .seconds(2)).isOK { serving.insert(instance.port) }
            }
            return serving.count == instances.count
        }
        let elapsed = Date().timeIntervalSince(started)
        let exited = instances.filter { $0.process.hasExited }
        for instance in exited.prefix(5) {
            Issue.record("the supervisor of \(instance.state) exited: \((try? String(contentsOfFile: instance.stderr, encoding: .utf8)) ?? "")")
        }
        #expect(exited.isEmpty, "\(exited.count) of \(Self.count) supervisors exited")
        #expect(serving.count == Self.count, "\(serving.count) of \(Self.count) serve")
        // Each is supervised: its children's readiness came through its own notify socket.
        let supervised = instances.filter {
            if case .live = SupervisorIdentity.check(in: StateDirectory(path: $0.state)) { return true }
            return false
        }.count
        #expect(supervised == Self.count, "\(supervised) of \(Self.count) have a live supervisor record")
        print("ManySupervisorsTests: \(Self.count) supervisors spawned in \(String(format: "%.1f", spawned)) s, all serving after \(String(format: "%.1f", elapsed)) s")
    }
}
