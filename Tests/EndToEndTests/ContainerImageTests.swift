import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// docs/deploying.md's container, run by a real engine: the image `Examples/NotesServer/Dockerfile`
/// makes (``NotesImage``), started by podman as its user 10001 with the state on a named
/// volume and the port published on 127.0.0.1, as an operator runs it. The command is the
/// sample's (`serve --http 0.0.0.0:8080`), given after the image name as the docs say.
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
        func start(_ extra: [String] = []) throws -> String {
            let name = Podman.uniqueName("switchback-test-notes")
            containers.append(name)
            try Podman.check(["run", "-d", "--name", name, "-v", "\(volume):/var/lib/notes", "-p", "127.0.0.1:\(port):8080"]
                             + extra + [image.name, "serve", "--http", "0.0.0.0:8080"])
            return name
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
        var container = try start(["--restart=on-failure"])
        try #require(waitForAnswer(from: image.current), "the container never answered from \(image.current): \(try Podman.run("logs", container))")
        print(String(format: "ContainerImageTests: first HTTP 200 on the published port %.2f s after podman run (first start of the image: every slot and library hashed)", seconds(since: started)))
        #expect(try Podman.check("exec", container, "id", "-u") == "10001")
        #expect(try Podman.check("exec", container, "stat", "-c", "%u %a", "/var/lib/notes/state") == "10001 700")

        // A rollback by rollbackctl in the container (the image's user and state directory),
        // applied by the next start.
        let rolledBack = try Podman.run("exec", container, "/opt/notes/bin/rollbackctl", "rollback", "--reason", "tried in a container")
        #expect(rolledBack.status == 0, "\(rolledBack)")
        #expect(rolledBack.stdout.contains("Rolled back: the next start runs the previous slot (\(image.previous))."), "\(rolledBack)")
        let restarted = ContinuousClock.now
        try Podman.check("restart", container)
        #expect(waitForAnswer(from: image.previous), "after podman restart: \(answer() ?? "no answer")")
        print(String(format: "ContainerImageTests: first HTTP 200 %.2f s after podman restart (a later start: fingerprints only)", seconds(since: restarted)))

        // podman stop: SIGTERM, a clean exit well within the grace (10 s).
        let stopping = ContinuousClock.now
        try Podman.check("stop", "-t", "10", container)
        let stopSeconds = seconds(since: stopping)
        #expect(try Podman.check("inspect", "--format", "{{.State.ExitCode}}", container) == "0")
        #expect(stopSeconds < 8, "podman stop took \(stopSeconds) s: the server did not end on SIGTERM")
        print(String(format: "ContainerImageTests: podman stop returned in %.2f s, exit code 0", stopSeconds))

        // A new container on the same volume keeps the rollback.
        try Podman.check("rm", container)
        container = try start(["--restart=on-failure"])
        #expect(waitForAnswer(from: image.previous), "a new container on the same volume: \(answer() ?? "no answer")")
        let status = try Podman.check("exec", container, "/opt/notes/bin/rollbackctl", "status", "--json")
        #expect(status.contains("\"rollback\" : true") || status.contains("\"rollback\":true"), "\(status)")

        // Killed with SIGKILL: the restart policy starts it again, on the same slot.
        let killed = ContinuousClock.now
        try Podman.check("kill", "-s", "KILL", container)
        let back = waitUntil(seconds: 60) {
            (try? Podman.check("inspect", "--format", "{{.RestartCount}}", container)).flatMap { Int($0) }.map { $0 >= 1 } == true
                && answer()?.hasPrefix("version \(image.previous) ") == true
        }
        #expect(back, "after podman kill -s KILL with --restart=on-failure: \(answer() ?? "no answer"); \(try Podman.run("inspect", "--format", "{{.State.Status}} {{.RestartCount}} {{.State.ExitCode}}", container))")
        print(String(format: "ContainerImageTests: podman kill -s KILL, restarted by --restart=on-failure and answering from the same slot %.2f s later", seconds(since: killed)))
        try Podman.check("rm", "-f", "-t", "0", container)

        // Supervised, the launcher is PID 1: a switch happens live, PID 1 stays, and what is
        // orphaned inside the container (here, a sleep whose shell exited) is reaped by it.
        container = try start(["-e", "SWITCHBACK_SUPERVISE=1"])
        try #require(waitForAnswer(from: image.previous), "supervised: \(try Podman.run("logs", container))")
        let pid1 = try Podman.check("exec", container, "cat", "/proc/1/stat")
        #expect(try Podman.check("exec", container, "readlink", "/proc/1/exe") == "/opt/notes/bin/launcher")
        let forward = try Podman.run("exec", container, "/opt/notes/bin/rollbackctl", "rollforward", "--reason", "fixed")
        #expect(forward.status == 0, "\(forward)")
        let switching = ContinuousClock.now
        #expect(waitForAnswer(from: image.current, within: 30), "the supervised rollforward: \(answer() ?? "no answer")")
        print(String(format: "ContainerImageTests: supervised as PID 1, the rollforward served live %.2f s after rollbackctl returned", seconds(since: switching)))
        let pid1After = try Podman.check("exec", container, "cat", "/proc/1/stat")
        // pid, name and start time (field 22): the same process.
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
