import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// docs/deploying.md's container, run by a real engine: the image `Examples/NotesServer/Dockerfile`
/// makes (``NotesImage``), started by podman as its user 10001 with the state on a named
/// volume and the port published on 127.0.0.1, as an operator runs it. The command is the
/// sample's, given after the image name as the docs say: `serve --http 0.0.0.0:8080` where
/// the current build runs; `serve` (a heartbeat in the state directory, no HTTP) where the
/// previous one may, since the sample's previous release predates `--http`.
@Suite struct ContainerImageTests {
    @Test func theImageServesRollsBackKeepsItsStateAndStopsCleanly() throws {
        let image = try NotesImage.shared()
        let volume = Podman.uniqueName("switchback-test-notes-data")
        try Podman.check("volume", "create", volume)
        var containers: [String] = []
        defer {
            for container in containers { _ = try? Podman.run("rm", "-f", "-t", "0", container) }
            _ = try? Podman.run("volume", "rm", "-f", volume)
        }
        let port = try unusedLocalPort()
        func start(_ extra: [String] = [], http: Bool = false) throws -> String {
            let name = Podman.uniqueName("switchback-test-notes")
            containers.append(name)
            try Podman.check(["run", "-d", "--name", name, "-v", "\(volume):/var/lib/notes", "-p", "127.0.0.1:\(port):8080"]
                             + extra + [image.name, "serve"] + (http ? ["--http", "0.0.0.0:8080"] : []))
            return name
        }
        let state = "/var/lib/notes/state"
        func server(_ container: String, runs version: String, restartedFrom before: [String: String]? = nil) -> [String: String]? {
            Podman.waitForServer(container, stateDirectory: state, version: version, restartedFrom: before)
        }
        func answer() -> String? {
            if case .ok(let body) = HTTPPoller.request(port: port, path: "/", timeout: .seconds(2)) { return body }
            return nil
        }
        func waitForAnswer(from version: String, within limit: Double = 60) -> Bool {
            waitUntil(seconds: limit) { answer()?.hasPrefix("version \(version) ") == true }
        }

        // The first start: it runs as 10001, from the image's volume content (state/ 0700).
        let started = ContinuousClock.now
        var container = try start(http: true)
        try #require(waitForAnswer(from: image.current), "the container never answered from \(image.current): \(Podman.say("logs", container))")
        print(String(format: "ContainerImageTests: first HTTP 200 on the published port %.2f s after podman run (the image's first start: every slot and library hashed)", seconds(since: started)))
        #expect(try Podman.check("exec", container, "id", "-u") == "10001")
        #expect(try Podman.check("exec", container, "stat", "-c", "%u %a", state) == "10001 700")
        let restarted = ContinuousClock.now
        try Podman.check("restart", container)
        #expect(waitForAnswer(from: image.current), "after podman restart: \(answer() ?? "no answer")")
        print(String(format: "ContainerImageTests: first HTTP 200 %.2f s after podman restart (a later start: fingerprints only)", seconds(since: restarted)))
        // podman stop: SIGTERM, a clean exit well within the grace (10 s).
        let stopping = ContinuousClock.now
        try Podman.check("stop", "-t", "10", container)
        let stopSeconds = seconds(since: stopping)
        #expect(try Podman.check("inspect", "--format", "{{.State.ExitCode}}", container) == "0")
        #expect(stopSeconds < 8, "podman stop took \(stopSeconds) s: the server did not end on SIGTERM")
        print(String(format: "ContainerImageTests: podman stop returned in %.2f s, exit code 0", stopSeconds))
        try Podman.check("rm", container)

        // A rollback by rollbackctl in the container (the image's user and state directory),
        // applied by the next start.
        container = try start(["--restart=on-failure"])
        try #require(server(container, runs: image.current) != nil, "\(Podman.say("logs", container))")
        let rolledBack = try Podman.run("exec", container, "/opt/notes/bin/rollbackctl", "rollback", "--reason", "tried in a container")
        #expect(rolledBack.status == 0, "\(rolledBack)")
        #expect(rolledBack.stdout.contains("Rolled back: the next start runs the previous slot (\(image.previous))."), "\(rolledBack)")
        try Podman.check("restart", container)
        #expect(server(container, runs: image.previous) != nil, "after podman restart: \(Podman.say("logs", container))")

        // A new container on the same volume keeps the rollback.
        try Podman.check("rm", "-f", "-t", "10", container)
        container = try start(["--restart=on-failure"])
        var beat = server(container, runs: image.previous)
        #expect(beat != nil, "a new container on the same volume: \(Podman.say("logs", container))")
        let status = try Podman.check("exec", container, "/opt/notes/bin/rollbackctl", "status", "--json")
        #expect(status.contains("\"rollback\" : true") || status.contains("\"rollback\":true"), "\(status)")

        // `podman kill -s KILL` is an operator's stop for podman 4.3: the container stays
        // exited, whatever its restart policy (so is `docker kill` for Docker). Started again,
        // it runs the same slot.
        usleep(2_000_000)  // some beats, so that the start below shows as fewer
        beat = Podman.heartbeat(container, stateDirectory: state) ?? beat
        try Podman.check("kill", "-s", "KILL", container)
        #expect(waitUntil(seconds: 30) { (try? Podman.check("inspect", "--format", "{{.State.Status}}", container)) == "exited" })
        #expect(try Podman.check("inspect", "--format", "{{.RestartCount}} {{.State.ExitCode}}", container) == "0 137")
        try Podman.check("start", container)
        beat = server(container, runs: image.previous, restartedFrom: beat)
        #expect(beat != nil, "podman start after podman kill: \(Podman.say("logs", container))")
        // A SIGKILL the engine did not send (the OOM killer, a crash) is what the restart
        // policy is for: it starts the container again, on the same slot.
        usleep(2_000_000)
        beat = Podman.heartbeat(container, stateDirectory: state) ?? beat
        let pid = try Podman.check("inspect", "--format", "{{.State.Pid}}", container)
        let killed = ContinuousClock.now
        #expect(kill(pid_t(pid) ?? 0, SIGKILL) == 0, "kill -9 \(pid)")
        let back = waitUntil(seconds: 60) {
            (try? Podman.check("inspect", "--format", "{{.RestartCount}}", container)).flatMap { Int($0) }.map { $0 >= 1 } == true
                && server(container, runs: image.previous, restartedFrom: beat) != nil
        }
        #expect(back, "after kill -9 of its process with --restart=on-failure: \(Podman.say("inspect", "--format", "{{.State.Status}} {{.RestartCount}} {{.State.ExitCode}}", container))")
        print(String(format: "ContainerImageTests: kill -9 of the container's process, restarted by --restart=on-failure and running the same slot %.2f s later", seconds(since: killed)))
        try Podman.check("rm", "-f", "-t", "10", container)

        // Supervised, the launcher is PID 1: a switch happens live, PID 1 stays, and what is
        // orphaned inside the container (here, a sleep whose shell exited) is reaped by it.
        container = try start(["-e", "SWITCHBACK_SUPERVISE=1"])
        try #require(server(container, runs: image.previous) != nil, "supervised: \(Podman.say("logs", container))")
        let pid1 = try Podman.check("exec", container, "cat", "/proc/1/stat")
        #expect(try Podman.check("exec", container, "readlink", "/proc/1/exe") == "/opt/notes/bin/launcher")
        let forward = try Podman.run("exec", container, "/opt/notes/bin/rollbackctl", "rollforward", "--reason", "fixed")
        #expect(forward.status == 0, "\(forward)")
        let switching = ContinuousClock.now
        #expect(server(container, runs: image.current) != nil, "the supervised rollforward: \(Podman.say("logs", container))")
        print(String(format: "ContainerImageTests: supervised as PID 1, the rollforward running live %.2f s after rollbackctl returned", seconds(since: switching)))
        let pid1After = try Podman.check("exec", container, "cat", "/proc/1/stat")
        // pid and start time (field 22): the same process.
        let fields = { (stat: String) -> [Substring] in
            let after = stat[stat.range(of: ")")!.upperBound...].split(separator: " ")
            return [stat.split(separator: " ")[0], after[19]]
        }
        #expect(fields(pid1) == fields(pid1After), "PID 1 changed: \(pid1) then \(pid1After)")
        _ = try Podman.bash(container, "sleep 0.3 & exit 0")
        usleep(1_500_000)
        let zombies = try Podman.bash(container, "grep -l ') Z ' /proc/[0-9]*/stat || true")
        #expect(zombies.stdout == "", "zombies in the container: \(zombies.stdout)")
        let supervisedStop = ContinuousClock.now
        try Podman.check("stop", "-t", "10", container)
        #expect(try Podman.check("inspect", "--format", "{{.State.ExitCode}}", container) == "0")
        print(String(format: "ContainerImageTests: supervised podman stop returned in %.2f s, exit code 0", seconds(since: supervisedStop)))
    }
}
