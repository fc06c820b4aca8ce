import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// docs/deploying.md's systemd unit, unchanged, under a real systemd: a container whose PID 1
/// is systemd (scripts/lib/base-image --systemd, run with `podman run --systemd=always`), the
/// test bundle installed at /opt/notes as the docs install the release, the user made with the
/// docs' `useradd`. The units are read from the docs; the one thing the test adds is a drop-in
/// that gives the sample's command (the units name the Hummingbird example's `serve --port
/// 8080`): `serve --http 127.0.0.1:8080` (or `--inherited`) while the current build runs,
/// `serve` (a heartbeat in the state directory, no HTTP) where the previous one may, since the
/// sample's previous release predates `--http`; plus, where a step needs it, the watchdog.
/// The container has no network but its own loopback, where the test's requests go.
@Suite struct SystemdUnitTests {
    @Test func theDocumentedUnitsRunUnderSystemd() throws {
        let image = try NotesImage.shared()
        let base = try Podman.baseImage("SWITCHBACK_TEST_SYSTEMD_IMAGE", made: "--systemd")
        let unit = try documentedBlock("docs/deploying.md", after: "## systemd", language: "ini")
        let socketUnit = try documentedBlock("docs/deploying.md", after: "### Socket activation", language: "ini")
        let supervisedUnit = try documentedBlock("docs/supervise.md", after: "## Under systemd", language: "ini")
        let container = Podman.uniqueName("switchback-test-systemd")
        defer { _ = try? Podman.run("rm", "-f", "-t", "0", container) }
        // CAP_SYS_ADMIN, which systemd on a host has: without it (podman's default set) systemd
        // cannot make a service's mount namespace, runs it without ProtectSystem= and
        // PrivateTmp= ("assuming containerized execution"), and / stays writable for it.
        try Podman.check("run", "-d", "--name", container, "--systemd=always", "--cap-add=SYS_ADMIN", "--network=none",
                         "-v", "\(image.bundle):/opt/notes:ro", base, "/sbin/init")
        func sh(_ script: String) throws -> ProcessResult { try Podman.bash(container, script) }
        func say(_ script: String) -> String { (try? sh(script))?.description ?? "(podman exec failed)" }
        func must(_ script: String) throws -> String {
            let result = try sh(script)
            guard result.status == 0 else { throw TestFailure("in the systemd container, \(script) failed: \(result)") }
            return result.stdout.trimmingCharacters(in: .newlines)
        }
        func answer() -> String? {
            guard let reply = try? Podman.get(container, port: 8080), reply.status == 200 else { return nil }
            return reply.body
        }
        func answers(_ version: String) -> Bool { answer()?.hasPrefix("version \(version) ") == true }
        func show(_ property: String, _ name: String = "notes") throws -> String {
            try must("systemctl show -P \(property) \(name)")
        }
        func writeFile(_ path: String, _ text: String) throws {
            _ = try must("mkdir -p \"$(dirname \(path))\" && cat > \(path) <<'UNIT'\n\(text)UNIT")
        }
        func runs(_ version: String, restartedFrom before: [String: String]? = nil) -> [String: String]? {
            Podman.waitForServer(container, stateDirectory: "/var/lib/notes", version: version, restartedFrom: before)
        }
        let dropIn = "/etc/systemd/system/notes.service.d/sample.conf"
        func command(_ arguments: String) -> String { "[Service]\nExecStart=\nExecStart=/opt/notes/bin/launcher \(arguments)\n" }

        // Up: "running", or "degraded" if a unit of the container's own failed (none of the test's).
        try #require(waitUntil(seconds: 60) {
            let state = (try? sh("systemctl is-system-running"))?.stdout ?? ""
            return state.hasPrefix("running") || state.hasPrefix("degraded")
        },
                     "systemd did not come up in the container: \(say("systemctl is-system-running; systemctl --failed"))")
        // The docs' install, without sudo (a minimal Debian has none; this runs as root).
        _ = try must("useradd --system --user-group --home-dir /nonexistent --shell /usr/sbin/nologin notes")
        try writeFile("/etc/systemd/system/notes.service", unit)
        try writeFile(dropIn, command("serve --http 127.0.0.1:8080"))

        // Type=notify: `enable --now` returns once the launcher sent READY=1, which the sample
        // sends once it listens: the very next request is answered.
        let enabled = try must("systemctl daemon-reload; s=$EPOCHREALTIME; systemctl enable --now notes 2>/dev/null; e=$EPOCHREALTIME; echo $s $e")
            .split(separator: " ").compactMap { Double($0) }
        #expect(answers(image.current), "right after systemctl enable --now returned: \(answer() ?? "no answer")")
        print(String(format: "SystemdUnitTests: systemctl enable --now notes (Type=notify) returned active in %.2f s, and the next request was answered", enabled[1] - enabled[0]))
        #expect(try show("ActiveState") == "active")
        let mainPID = try show("MainPID")
        // ProtectSystem=strict: the service sees / read-only; its state directory is 0700, its user's.
        #expect(try must("awk '$5 == \"/\" { print $6 }' /proc/\(mainPID)/mountinfo | tail -n 1").hasPrefix("ro"))
        #expect(try must("stat -c '%U %a' /var/lib/notes") == "notes 700")
        #expect(try must("journalctl -u notes -o cat").contains("serving: version \(image.current)"))

        // The watchdog: WatchdogSec=2, and the sample stops its pings 1 s after it starts.
        try writeFile("/etc/systemd/system/notes.service.d/watchdog.conf", "[Service]\nWatchdogSec=2\nEnvironment=SAMPLE_STOP_WATCHDOG_AFTER_S=1\n")
        _ = try must("systemctl daemon-reload && systemctl restart notes")
        let activeAt = Double(try show("ActiveEnterTimestampMonotonic")) ?? 0
        var fired: [String: Any]?
        _ = waitUntil(seconds: 30) {
            fired = (try? must("journalctl -u notes -o json --no-pager"))?.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.first { ($0["MESSAGE"] as? String)?.contains("Watchdog timeout") == true }
            return fired != nil
        }
        let firedEntry = try #require(fired, "no watchdog timeout in the journal: \(say("systemctl status notes --no-pager"))")
        let firedAt = Double(firedEntry["__MONOTONIC_TIMESTAMP"] as? String ?? "") ?? 0
        print(String(format: "SystemdUnitTests: the watchdog (WatchdogSec=2) fired %.2f s after the service became active; the sample's pings stop 1 s after its start (%@)",
                     (firedAt - activeAt) / 1e6, firedEntry["MESSAGE"] as? String ?? ""))
        #expect((firedAt - activeAt) / 1e6 < 10)
        _ = try must("rm /etc/systemd/system/notes.service.d/watchdog.conf && systemctl daemon-reload && systemctl restart notes")
        #expect(answers(image.current))

        // Socket activation: the docs' notes.socket holds 127.0.0.1:8080; the first connection
        // starts the service, which serves on the socket it was handed (the sample's --inherited).
        _ = try must("systemctl stop notes")
        try writeFile("/etc/systemd/system/notes.socket", socketUnit)
        try writeFile(dropIn, command("serve --inherited"))
        _ = try must("systemctl daemon-reload && systemctl start notes.socket")
        #expect(try show("ActiveState") == "inactive")
        let socketStart = ContinuousClock.now
        #expect(answers(image.current), "through the socket unit: \(say("systemctl status notes.socket notes --no-pager"))")
        print(String(format: "SystemdUnitTests: socket activation: the first request, which started the service, answered in %.2f s", seconds(since: socketStart)))
        #expect(try show("ActiveState") == "active")
        #expect(try must("journalctl -u notes -o cat").contains("http: listening on"))
        _ = try must("systemctl stop notes.socket notes && rm /etc/systemd/system/notes.socket")

        // A start that never gets ready is never active: the sample hangs before it listens or
        // marks itself good (SIGTERM blocked), and TimeoutStartSec (3 s here) fails the start.
        try writeFile(dropIn, command("serve"))
        try writeFile("/etc/systemd/system/notes.service.d/hang.conf",
                      "[Service]\nTimeoutStartSec=3\nTimeoutStopSec=1\nRestart=no\nEnvironment=SAMPLE_HANG_AT_START=\(image.current)\n")
        _ = try must("systemctl daemon-reload")
        let hung = ContinuousClock.now
        let hangingStart = try sh("systemctl start notes")
        #expect(hangingStart.status != 0, "a start that never got ready: \(hangingStart)")
        print(String(format: "SystemdUnitTests: a start that never got ready failed after %.2f s (TimeoutStartSec=3)", seconds(since: hung)))
        #expect(try show("ActiveState") == "failed")
        #expect(try show("Result") == "timeout")
        _ = try must("rm /etc/systemd/system/notes.service.d/hang.conf && systemctl daemon-reload && systemctl reset-failed notes")

        // A rollback by the service's user, then a restart; a second restart keeps the choice.
        _ = try must("systemctl daemon-reload && systemctl start notes")
        try #require(runs(image.current) != nil)
        let rolledBack = try must("runuser -u notes -- /opt/notes/bin/rollbackctl --state-dir /var/lib/notes rollback --reason 'tried under systemd'")
        #expect(rolledBack.contains("Rolled back: the next start runs the previous slot (\(image.previous))."))
        _ = try must("systemctl restart notes")
        var beat = runs(image.previous)
        #expect(beat != nil, "after systemctl restart: \(say("systemctl status notes --no-pager"))")
        _ = try must("systemctl restart notes")
        beat = runs(image.previous, restartedFrom: beat)
        #expect(beat != nil, "after a second systemctl restart: \(say("systemctl status notes --no-pager"))")
        // The journal holds the entry rollbackctl wrote, with the fields docs/monitoring.md names.
        let entries = try must("journalctl SYSLOG_IDENTIFIER=switchback -o json").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let rollback = try #require(entries.first { $0["SWITCHBACK_EVENT"] as? String == "rollback" }, "no rollback entry in \(entries)")
        #expect(rollback["MESSAGE_ID"] as? String == "b196af21f15b4019804d09196588d910")
        #expect(rollback["PRIORITY"] as? String == "5")
        #expect(rollback["SWITCHBACK_SLOT"] as? String == "previous")
        #expect(rollback["SWITCHBACK_FROM_SLOT"] as? String == "current")
        #expect(rollback["SWITCHBACK_VERSION"] as? String == image.previous)
        #expect(rollback["SWITCHBACK_SOURCE"] as? String == "cli")
        #expect(rollback["SWITCHBACK_REASON"] as? String == "tried under systemd")
        #expect(rollback["SWITCHBACK_STATE_DIR"] as? String == "/var/lib/notes")
        #expect((rollback["SWITCHBACK_APP_ID"] as? String)?.isEmpty == false)

        // SIGKILL: Restart=on-failure starts it again (RestartSec=2), on the same slot.
        let restartsBefore = Int(try show("NRestarts")) ?? 0
        let killed = ContinuousClock.now
        _ = try must("systemctl kill -s KILL notes")
        let back = waitUntil(seconds: 30) { (Int((try? show("NRestarts")) ?? "") ?? 0) > restartsBefore && runs(image.previous, restartedFrom: beat) != nil }
        #expect(back, "after systemctl kill -s KILL: \(say("systemctl status notes --no-pager"))")
        print(String(format: "SystemdUnitTests: systemctl kill -s KILL notes, restarted by Restart=on-failure and running the same slot %.2f s later", seconds(since: killed)))
        _ = try must("systemctl stop notes")

        // The supervised unit of docs/supervise.md: the same paths, user and state directory,
        // so it takes over this install with its rollback; a rollforward then switches live.
        try writeFile("/etc/systemd/system/notes.service", supervisedUnit)
        let supervised = try must("systemctl daemon-reload; s=$EPOCHREALTIME; systemctl start notes; e=$EPOCHREALTIME; echo $s $e")
            .split(separator: " ").compactMap { Double($0) }
        beat = runs(image.previous)
        #expect(beat != nil, "the supervised unit: \(say("systemctl status notes --no-pager; journalctl -u notes -n 20 --no-pager"))")
        print(String(format: "SystemdUnitTests: the supervised unit: systemctl start returned active in %.2f s", supervised[1] - supervised[0]))
        let supervisor = try show("MainPID")
        _ = try must("runuser -u notes -- /opt/notes/bin/rollbackctl --state-dir /var/lib/notes rollforward --reason 'fixed'")
        let switching = ContinuousClock.now
        #expect(runs(image.current) != nil, "the supervised rollforward: \(say("journalctl -u notes -n 20 --no-pager"))")
        print(String(format: "SystemdUnitTests: supervised: the rollforward running live %.2f s after rollbackctl returned", seconds(since: switching)))
        #expect(try show("MainPID") == supervisor, "the supervisor was restarted: the switch was not live")
        #expect(try show("ActiveState") == "active")
        _ = try must("systemctl stop notes")
        #expect(try show("Result") == "success")
    }
}
