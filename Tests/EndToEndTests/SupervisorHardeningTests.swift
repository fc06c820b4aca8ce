import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What another local user could do to a supervisor, and what the supervisor's sockets and
/// probes guarantee: the readiness channel only its children reach, `[::]` on both families,
/// a probe's whole process group stopped at its timeout.
@Suite(.serialized) struct SupervisorHardeningTests {
    // MARK: - The readiness channel

    /// A datagram flooder: sends to every socket named on its command line until SIGTERM,
    /// then prints how many datagrams went through and how many the kernel refused to it.
    static let flooder = #"""
        #include <errno.h>
        #include <signal.h>
        #include <stdio.h>
        #include <string.h>
        #include <sys/socket.h>
        #include <sys/un.h>
        #include <unistd.h>

        static volatile sig_atomic_t stopping;
        static void stop(int signal) { (void)signal; stopping = 1; }

        int main(int argc, char **argv) {
            signal(SIGTERM, stop);
            int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
            const char message[] = "READY=0\nSTATUS=flood";
            long sent = 0, denied = 0, full = 0;
            while (!stopping) {
                for (int i = 1; i < argc; i++) {
                    struct sockaddr_un address;
                    memset(&address, 0, sizeof address);
                    address.sun_family = AF_UNIX;
                    size_t length = strlen(argv[i]);
                    if (length >= sizeof address.sun_path) continue;
                    memcpy(address.sun_path, argv[i], length);
                    if (address.sun_path[0] == '@') address.sun_path[0] = '\0';
                    socklen_t size = (socklen_t)(sizeof address.sun_family + length + (argv[i][0] == '@' ? 0 : 1));
                    if (sendto(fd, message, sizeof message - 1, MSG_DONTWAIT, (struct sockaddr *)&address, size) >= 0) sent++;
                    else if (errno == EACCES || errno == EPERM) denied++;
                    else full++;
                }
                usleep(100);
            }
            printf("sent=%ld denied=%ld full=%ld\n", sent, denied, full);
            return 0;
        }
        """#

    /// The named unix datagram sockets (`/proc/net/unix`) that `pids` hold, as NOTIFY_SOCKET
    /// spells them (`@name` for an abstract one), and the NOTIFY_SOCKET their environments
    /// name. Only this test's own supervisor: other tests on the machine run supervisors too.
    static func notifySockets(of pids: [Int32]) -> Set<String> {
        var inodes: Set<String> = []
        var names: Set<String> = []
        for pid in pids {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            for fd in fds {
                if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                   target.hasPrefix("socket:[") {
                    inodes.insert(String(target.dropFirst(8).dropLast()))
                }
            }
            if let environment = FileManager.default.contents(atPath: "/proc/\(pid)/environ") {
                for entry in environment.split(separator: 0) {
                    let text = String(decoding: entry, as: UTF8.self)
                    if text.hasPrefix("NOTIFY_SOCKET=") { names.insert(String(text.dropFirst(14))) }
                }
            }
        }
        let table = (try? String(contentsOfFile: "/proc/net/unix", encoding: .utf8)) ?? ""
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // Num RefCount Protocol Flags Type St Inode Path; Type 0002 is SOCK_DGRAM.
            guard fields.count >= 8, fields[4] == "0002", inodes.contains(String(fields[6])) else { continue }
            names.insert(String(fields[7]))
        }
        return names
    }

    /// The children of `pid` (from /proc/PID/task/*/children).
    static func children(of pid: Int32) -> [Int32] {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return text.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Four processes of the second user flood every notify socket of the supervisor and its
    /// child through ten live switches: all ten complete, none is a hung start or a failed
    /// switch, and neither build lost a try. The kernel refuses the flood: the socket is in a
    /// directory only the supervisor's user can enter.
    @Test(.enabled(if: geteuid() == 0, "needs root to flood as a second user"))
    func aFloodFromAnotherUserLosesNoReadinessInTenLiveSwitches() throws {
        let other = try SecondUser.uid()
        let (t, port) = try LiveSwitchTests.server(["supervise.start_deadline_ms": "8000"])
        let app = try LiveSwitchTests.serve(t, port)
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { LiveSwitchTests.version(port) == t.currentVersion })
        #expect(app.wait(upTo: 10) { app.record?.childReady == true })

        let sockets = Self.notifySockets(of: [app.pid] + Self.children(of: app.pid))
        try #require(!sockets.isEmpty, "no notify socket found for the supervisor \(app.pid)")
        let source = t.directory + "/flooder.c"
        try Self.flooder.write(toFile: source, atomically: true, encoding: .utf8)
        try shell("cc", "-O1", "-o", t.directory + "/flooder", source)
        try shell("chmod", "755", t.directory, t.directory + "/flooder")
        var flooders: [(process: SpawnedProcess, output: String)] = []
        for index in 0..<4 {
            let output = t.directory + "/flooder-\(index).out"
            let process = try SpawnedProcess("/usr/bin/setpriv", ["--reuid=\(other)", "--regid=\(other)", "--clear-groups",
                                                                   t.directory + "/flooder"] + sockets.sorted(),
                                             environment: ["PATH": "/usr/bin:/bin"], stdout: output)
            flooders.append((process, output))
        }
        defer { for flooder in flooders where !flooder.process.hasExited { kill(flooder.process.pid, SIGKILL); flooder.process.wait() } }
        usleep(300_000)

        for index in 0..<10 {
            let back = index % 2 == 0
            let result = try t.rollbackctl(back ? "rollback" : "rollforward")
            #expect(result.status == 0, "\(result)")
            let switched = app.wait(upTo: 30) {
                app.record.map { $0.candidatePID == nil && $0.childReady == true && $0.childSlot == (back ? .previous : .current) } == true
            }
            #expect(switched, "switch \(index + 1): \(app.stderr)")
        }

        var sent = 0
        for flooder in flooders {
            kill(flooder.process.pid, SIGTERM)
            flooder.process.wait()
            let text = (try? String(contentsOfFile: flooder.output, encoding: .utf8)) ?? ""
            let counts = Dictionary(uniqueKeysWithValues: text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { word -> (String, Int)? in
                let parts = word.split(separator: "=")
                return parts.count == 2 ? (String(parts[0]), Int(parts[1]) ?? 0) : nil
            })
            #expect(counts["denied", default: 0] > 0, "the flooder ran and was refused: \(text)")
            sent += counts["sent", default: 0]
        }
        #expect(sent == 0, "no datagram of another user's reached the supervisor (\(sockets))")
        let kinds = try LiveSwitchTests.kinds(t)
        #expect(!kinds.contains("hung_start") && !kinds.contains("switch_failed"), "\(kinds)")
        for slot in ["current", "previous"] {
            let health = try t.health(slot)
            #expect(health.verdict == "good", "\(slot): \(health)")
            #expect(health.failedStarts == 0, "\(slot): \(health)")
        }
        for socket in sockets where socket.hasPrefix("/") {
            let directory = FileSystem.parentDirectory(of: socket)
            let mode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
            #expect(mode == 0o700, "\(directory)")
        }
    }

    /// Even with the child's `READY=1` lost — the notify socket's queue kept full, here by
    /// root, the only user who can reach it — a child that marks itself good is ready: the
    /// supervisor reads the good mark from the health file. The previous build runs for the
    /// first time, on trial, so its start writes the mark.
    @Test func aGoodMarkMakesAChildReadyWhenItsReadyDatagramIsLost() throws {
        let (t, port) = try LiveSwitchTests.server(["supervise.start_deadline_ms": "8000"])
        let app = try LiveSwitchTests.serve(t, port)
        defer { app.stop() }
        #expect(app.wait(upTo: 30) { app.record?.childReady == true }, "\(app.stderr)")
        #expect(try t.health("previous").verdict == "trial")
        var sockets: Set<String> = []
        // Read until found: /proc's tables are read in several steps while the supervisor works.
        _ = waitUntil(seconds: 10) {
            sockets = Self.notifySockets(of: [app.pid]).filter { $0.hasPrefix("/") }
            return sockets.count == 1
        }
        try #require(sockets.count == 1, "\(sockets)")
        let source = t.directory + "/flooder.c"
        try Self.flooder.write(toFile: source, atomically: true, encoding: .utf8)
        try shell("cc", "-O1", "-o", t.directory + "/flooder", source)
        var flooders: [(process: SpawnedProcess, output: String)] = []
        for index in 0..<4 {
            let output = t.directory + "/flooder-\(index).out"
            flooders.append((try SpawnedProcess(t.directory + "/flooder", sockets.sorted(), environment: [:], stdout: output), output))
        }
        defer { for flooder in flooders where !flooder.process.hasExited { kill(flooder.process.pid, SIGKILL); flooder.process.wait() } }
        usleep(300_000)

        #expect(try t.rollbackctl("rollback").status == 0)
        let switched = app.wait(upTo: 30) {
            app.record.map { $0.candidatePID == nil && $0.childReady == true && $0.childSlot == .previous } == true
        }
        var full = 0
        for flooder in flooders {
            kill(flooder.process.pid, SIGTERM)
            flooder.process.wait()
            let text = (try? String(contentsOfFile: flooder.output, encoding: .utf8)) ?? ""
            full += text.split(separator: " ").first { $0.hasPrefix("full=") }.flatMap { Int($0.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
        }
        print("a lost READY=1: \(app.stderr.split(separator: "\n").filter { $0.contains("is ready") })")
        #expect(switched, "\(app.stderr)")
        #expect(full > 0, "the flood filled the queue")
        #expect(app.stderr.contains("the previous slot (pid "), "\(app.stderr)")
        let kinds = try LiveSwitchTests.kinds(t)
        #expect(!kinds.contains("hung_start") && !kinds.contains("switch_failed"), "\(kinds)")
        #expect(try t.health("previous").verdict == "good")
    }

    /// The notify socket's directory is gone once the supervisor has exited.
    @Test func theNotifyDirectoryIsRemovedWhenTheSupervisorExits() throws {
        let (t, port) = try LiveSwitchTests.server()
        let app = try LiveSwitchTests.serve(t, port)
        defer { app.stop() }
        #expect(app.wait(upTo: 30) { app.record?.childReady == true }, "\(app.stderr)")
        var sockets: Set<String> = []
        // Read until found: /proc's tables are read in several steps while the supervisor works.
        _ = waitUntil(seconds: 10) {
            sockets = Self.notifySockets(of: [app.pid]).filter { $0.hasPrefix("/") }
            return sockets.count == 1
        }
        try #require(sockets.count == 1, "\(sockets)")
        let directory = FileSystem.parentDirectory(of: sockets.first!)
        #expect(directory.hasPrefix("/tmp/switchback-notify-"), "\(directory)")
        kill(app.pid, SIGTERM)
        app.waitForExit()
        #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is left behind")
    }

    // MARK: - [::]

    /// `[::]:PORT` declared, the app binding `[::]:PORT` itself: the child answers over IPv4
    /// and IPv6.
    @Test func anyIPv6AddressListensOnBothFamilies() throws {
        let port = try unusedLocalPort()
        let t = try TestBundle(release: "1.3.0")
        try t.setManifestSetting("supervise", "true")
        try t.setManifestSetting("supervise.listen", "[::]:\(port)")
        let app = try SupervisedLauncher(t, ["serve", "--http", "[::]:\(port)"])
        defer { app.stop() }
        #expect(app.wait(upTo: 30) { app.record?.childReady == true }, "\(app.stderr)")
        for host in ["127.0.0.1", "[::1]"] {
            let result = try runProcess("/usr/bin/curl", ["-sS", "-g", "--noproxy", "*", "--max-time", "5", "http://\(host):\(port)/"])
            #expect(result.status == 0 && result.stdout.hasPrefix("version \(t.currentVersion)"), "\(host): \(result)")
        }
        #expect(app.stderr.contains("cannot") == false, "\(app.stderr)")
    }

    // MARK: - Probes

    /// A `command:` probe that starts a long-lived grandchild and hangs: at the probe's 1 s
    /// timeout its whole process group is killed, the grandchild included.
    @Test func aTimedOutCommandProbeLeavesNothingRunning() throws {
        let port = try unusedLocalPort()
        let t = try TestBundle(release: "1.3.0")
        let pidFile = t.directory + "/grandchild.pid"
        try t.setManifestSetting("supervise.ready", "command:sleep 300 & echo $! > \(pidFile); wait")
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: ["SAMPLE_NO_GOOD_MARK": "1"])
        defer {
            app.stop()
            // The attempt running when the supervisor was killed is left: stop its sleep.
            if let last = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
                kill(last, SIGKILL)
            }
        }
        var grandchild: Int32?
        #expect(waitUntil(seconds: 30) {
            grandchild = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return grandchild != nil
        })
        let pid = try #require(grandchild)
        // The attempt times out after 1 s; the next one starts another grandchild.
        #expect(waitUntil(seconds: 10) { !isAlive(pid) }, "the grandchild \(pid) outlived its probe's timeout")
        #expect(app.record?.childReady == false)
    }
}
