import Foundation
import RollbackCtlKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Adopting Switchback from outside, end to end: a fresh git repository of an app package that
/// depends on nothing but Switchback (by path, this checkout), two releases made by the
/// documented routine, bundled with `swift run switchback-bundle`, then the bundles run as an
/// operator runs them, checked over loopback HTTP:
///
/// - the new release (1.1.0) answers, and stores a note in its own format (2);
/// - `rollbackctl rollback`: the next start answers as the old release (1.0.0) and lists the
///   note (the migration's revert ran); a roll-forward migrates again and a second rollback
///   still has every note;
/// - supervised (a bundle built with `--supervise`), a live switch: `rollbackctl rollback`
///   while the supervisor runs the server, and the same port answers as 1.0.0, then
///   `rollforward`, as 1.1.0 again;
/// - a 1.1.0 that crashes before it marks itself good: after 3 crashing starts the next one
///   serves as 1.0.0, with the launcher alone and under the supervisor.
///
/// The app's sources are Tests/Fixtures/AdoptedApp (its README says what each file is for).
/// Everything it builds stays in a temporary directory (its own `.build` and
/// `.build-switchback`) or in this checkout's `.build-tools` and `.build-launcher`, which
/// scripts/test builds first; never in the `.build` the running `swift test` holds.
@Suite(.serialized) struct AdoptionTests {
    @Test func anOutsideAppAdoptsSwitchbackReleasesTwiceAndRollsBack() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = Date()
        let app = try AdoptedApp.release(in: directory)
        print("AdoptionTests: the two releases and their bundles took \(Int(Date().timeIntervalSince(started))) s")
        try app.checkTheBundles()

        scenario("rollbackctl rollback and the data across it") { try app.rollbackAndTheDataFollowIt() }
        scenario("a supervised live switch") { try app.supervisedLiveSwitch() }
        scenario("automatic rollback after crashing starts") { try app.crashingStartsRollBack(supervised: false) }
        scenario("automatic rollback after crashing starts, supervised") { try app.crashingStartsRollBack(supervised: true) }
        print("AdoptionTests: done in \(Int(Date().timeIntervalSince(started))) s")
    }

    /// Runs one part of the story; an error ends that part only (each has its own state).
    func scenario(_ name: String, _ body: () throws -> Void) {
        do { try body() } catch is ScenarioStopped {
            // Recorded where it happened.
        } catch {
            Issue.record("\(name): \(error)")
        }
    }
}

/// Ends a part of the story after an issue was recorded where it failed.
private struct ScenarioStopped: Error {}

/// The adopted app's repository, after its two releases.
private struct AdoptedApp {
    let directory: String
    let repository: String
    var dist: String { repository + "/dist" }
    var distSupervised: String { repository + "/dist-supervised" }

    /// This Switchback checkout: what the app depends on, by absolute path.
    static let switchbackRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    static var fixture: String { switchbackRoot + "/Tests/Fixtures/AdoptedApp" }

    // MARK: The releases, as the app's developer makes them

    /// Creates the app's repository in `directory` and makes releases 1.0.0 and 1.1.0 and the
    /// bundles of 1.1.0 (dist, and dist-supervised built with --supervise), by the routine.
    static func release(in directory: String) throws -> AdoptedApp {
        let repository = directory + "/AdoptedApp"
        try FileManager.default.createDirectory(atPath: repository, withIntermediateDirectories: false)
        let template = try String(contentsOfFile: fixture + "/Package.swift.template", encoding: .utf8)
        try template.replacingOccurrences(of: "@SWITCHBACK_PATH@", with: switchbackRoot)
            .write(toFile: repository + "/Package.swift", atomically: true, encoding: .utf8)
        try shell("cp", "-R", fixture + "/Sources", repository + "/Sources")
        try shell("cp", fixture + "/gitignore", repository + "/.gitignore")

        let developer = Developer(repository: repository)
        let commit = "git -c user.name=Adopter -c user.email=adopter@example.invalid commit -q"
        // The first release.
        try developer.run("git init -q")
        try developer.run("echo 1.0.0 > VERSION")
        try developer.run("git add -A")
        try developer.run("\(commit) -m 'Release 1.0.0'")
        try developer.run("git tag v1.0.0")
        // The next release: pin the previous one, bump the version, change the code (1.1.0
        // stores its notes in format 2, with a migration step and its revert, and crashes at
        // start-up when ADOPTED_CRASH=1), commit Package.resolved too if SwiftPM wrote one.
        try developer.run("swift run switchback-bundle pin-previous v1.0.0")
        // Of Switchback's programs the app sees the four that ship, none of the developer tools
        // (Package.swift declares no product for them).
        let executables = try developer.run("swift package show-executables").stdout.split(separator: "\n")
            .filter { $0.hasSuffix(")") }.map { String($0.prefix { $0 != " " }) }.sorted()
        #expect(executables == ["launcher", "rollbackctl", "rollbackctl-remote", "switchback-bundle"], "\(executables)")
        try developer.run("echo 1.1.0 > VERSION")
        try developer.run("cp \(quoted(fixture + "/release-1.1.0/Release.swift")) Sources/AdoptedApp/Release.swift")
        try developer.run("git add -A")
        try developer.run("if [ -f Package.resolved ]; then git add -f Package.resolved; fi")
        try developer.run("\(commit) -m 'Release 1.1.0'")
        try developer.run("git tag v1.1.0")
        // The bundles: one by the developer, one as a CI job makes it (ciBundle).
        try developer.run("swift run switchback-bundle --out dist")
        try ciBundle(repository: repository, in: directory, arguments: "--supervise", out: repository + "/dist-supervised")
        return AdoptedApp(directory: directory, repository: repository)
    }

    /// Bundles the release as a CI job does: in a `git clone --depth 1` of the repository
    /// (what `actions/checkout` makes; the pinned previous commit is not in it, so the bundler
    /// fetches it), as an unprivileged user (nobody, with a HOME of its own), with python3
    /// hidden (an empty file mounted over it in a mount namespace of its own). The bundle is
    /// then installed to `out` as root installs one (copied, owned by root). The checkout's
    /// directory has a name of its own: SwiftPM names a package after its directory, and one
    /// named like the Switchback checkout it depends on (CI's is `clone`) would be taken for it.
    static func ciBundle(repository: String, in directory: String, arguments: String, out: String) throws {
        let ci = directory + "/ci"
        try shell("install", "-d", "-m", "755", "-o", "65534", "-g", "65534", ci, ci + "/home")
        try shell("chmod", "755", directory)
        // The repository is root's: git refuses another user's repository unless told to trust
        // it, in the user's global configuration (what actions/checkout writes on a runner).
        try "[safe]\n\tdirectory = *\n".write(toFile: ci + "/home/.gitconfig", atomically: true, encoding: .utf8)
        try shell("chown", "65534:65534", ci + "/home/.gitconfig")
        let script = """
            set -e
            mount --bind /dev/null /usr/bin/python3
            exec setpriv --reuid=65534 --regid=65534 --clear-groups env -i HOME=\(quoted(ci + "/home")) \
              PATH=\(quoted(FileSystemPaths.swiftBin)):/usr/bin:/bin \
              sh -c 'set -e; if python3 --version >/dev/null 2>&1; then echo "python3 is not hidden" >&2; exit 99; fi
                     cd \(quoted(ci)) && git clone -q --depth 1 file://\(quoted(repository)) adopted-app-checkout && cd adopted-app-checkout
                     test "$(git rev-parse --is-shallow-repository)" = true
                     swift run switchback-bundle \(arguments) --out \(quoted(ci + "/dist"))'
            """
        let result = try runProcess("/usr/bin/unshare", ["-m", "/bin/sh", "-c", script], deadline: 1500)
        guard result.status == 0, !result.signaled else {
            throw TestFailure("bundling a --depth 1 clone as nobody, without python3, failed: \(result)\n\(result.stderr.suffix(3000))")
        }
        try shell("cp", "-R", ci + "/dist", out)
    }

    /// The bundles hold 1.1.0 built from the tagged commit and 1.0.0 from the pinned one.
    func checkTheBundles() throws {
        let developer = Developer(repository: repository)
        let v100 = try developer.run("git rev-parse v1.0.0").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let v110 = try developer.run("git rev-parse --short=12 v1.1.0").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try developer.run("git status --porcelain").stdout == "", "the routine leaves the repository clean")
        for (bundle, supervise) in [(dist, "false"), (distSupervised, "true")] {
            let manifest = try Self.manifest(bundle)
            #expect(manifest["app_id"] == "AdoptedApp")
            #expect(manifest["current.version"] == "1.1.0")
            #expect(manifest["current.build"] == v110, "built from the clean release commit")
            #expect(manifest["previous.version"] == "1.0.0")
            #expect(manifest["previous.commit"] == v100, "PreviousVersion/ pins v1.0.0")
            #expect(manifest["supervise"] == supervise)
            for file in ["bin/launcher", "bin/rollbackctl", "slots/current/libAppCore.so", "slots/previous/libAppCore.so"] {
                #expect(FileManager.default.fileExists(atPath: bundle + "/" + file), "\(bundle)/\(file)")
            }
        }
    }

    static func manifest(_ bundle: String) throws -> [String: String] {
        var values: [String: String] = [:]
        for line in try String(contentsOfFile: bundle + "/manifest", encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { values[parts[0]] = parts[1] }
        }
        return values
    }

    // MARK: The checks, as an operator runs the bundles

    /// 1, 2 and 5: 1.1.0 answers and stores a note in format 2; `rollbackctl rollback` reverts
    /// the migration and the next start answers as 1.0.0 with the note; 1.0.0 adds one in
    /// format 1; `rollforward` migrates them again for 1.1.0; a second rollback keeps all three.
    func rollbackAndTheDataFollowIt() throws {
        let state = directory + "/state-rollback"
        let data = state + "/data"
        let port = try unusedLocalPort()

        try withServer(dist, state: state, port: port) { server in
            try server.requireVersion("1.1.0")
            try server.post("written by 1.1.0")
            #expect(try server.notes() == ["written by 1.1.0"])
        }
        #expect(exists(data + "/notes.v2") && !exists(data + "/notes.txt"), "1.1.0 keeps its notes in format 2")

        let rollback = try rollbackctl(dist, state: state, "rollback")
        #expect(rollback.status == 0, "\(rollback)")
        #expect(rollback.stdout.contains("Data: reverted migration step notes-format-2 so that 1.0.0 can read it.\n"), "\(rollback)")
        #expect(rollback.stdout.contains("Rolled back: the next start runs the previous slot (1.0.0).\n"), "\(rollback)")
        #expect(exists(data + "/notes.txt") && !exists(data + "/notes.v2"), "the revert wrote format 1 back")

        try withServer(dist, state: state, port: port) { server in
            try server.requireVersion("1.0.0")
            #expect(try server.notes() == ["written by 1.1.0"], "1.0.0 reads what 1.1.0 stored")
            try server.post("written by 1.0.0")
        }

        let rollforward = try rollbackctl(dist, state: state, "rollforward")
        #expect(rollforward.status == 0, "\(rollforward)")
        #expect(rollforward.stdout.contains("Rolled forward: the next start runs the current slot (1.1.0).\n"), "\(rollforward)")
        try withServer(dist, state: state, port: port) { server in
            try server.requireVersion("1.1.0")
            #expect(try server.notes() == ["written by 1.1.0", "written by 1.0.0"], "the migration ran again")
            try server.post("written again by 1.1.0")
        }
        #expect(exists(data + "/notes.v2") && !exists(data + "/notes.txt"))

        let second = try rollbackctl(dist, state: state, "rollback", "--reason", "adoption test")
        #expect(second.status == 0, "\(second)")
        try withServer(dist, state: state, port: port) { server in
            try server.requireVersion("1.0.0")
            #expect(try server.notes() == ["written by 1.1.0", "written by 1.0.0", "written again by 1.1.0"])
        }
    }

    /// 3: the supervisor (a bundle built with --supervise) runs the server; a rollback
    /// replaces the running 1.1.0 with 1.0.0 at the same port, a roll-forward puts 1.1.0 back,
    /// and the note stored before the switches survives both.
    func supervisedLiveSwitch() throws {
        let state = directory + "/state-supervised"
        let port = try unusedLocalPort()
        try withServer(distSupervised, state: state, port: port) { server in
            try server.requireVersion("1.1.0")
            try server.post("written before the switch")
            let status = try rollbackctl(distSupervised, state: state, "status")
            #expect(status.stdout.contains("Supervisor: pid \(server.pid), child pid "), "\(status)")

            let rollback = try rollbackctl(distSupervised, state: state, "rollback", "--reason", "live switch")
            #expect(rollback.status == 0, "\(rollback)")
            try server.requireVersion("1.0.0")
            #expect(!server.hasExited, "the same supervisor serves 1.0.0")
            #expect(try server.notes() == ["written before the switch"])

            let rollforward = try rollbackctl(distSupervised, state: state, "rollforward")
            #expect(rollforward.status == 0, "\(rollforward)")
            try server.requireVersion("1.1.0")
            #expect(!server.hasExited)
            #expect(try server.notes() == ["written before the switch"])
        }
    }

    /// 4: 1.1.0 crashes before it marks itself good (ADOPTED_CRASH=1, which 1.0.0 does not
    /// know); 3 crashing starts, and the next start serves as 1.0.0 in the same environment.
    /// Supervised, the supervisor's own restarts are the starts.
    func crashingStartsRollBack(supervised: Bool) throws {
        let state = directory + (supervised ? "/state-crashing-supervised" : "/state-crashing")
        let port = try unusedLocalPort()
        let crash = ["ADOPTED_CRASH": "1"]
        let bundle = supervised ? distSupervised : dist
        if !supervised {
            for start in 1...3 {
                let result = try runProcess(bundle + "/bin/launcher", ["--port", "\(port)"],
                                            environment: runtimeEnvironment(state: state).merging(crash) { $1 }, deadline: 60)
                #expect(result.signaled, "start \(start) crashes: \(result)")
                #expect(result.stderr.contains("AdoptedApp 1.1.0 crashes at start-up: ADOPTED_CRASH=1"), "start \(start): \(result)")
            }
        }
        try withServer(bundle, state: state, port: port, environment: crash) { server in
            try server.requireVersion("1.0.0")
            #expect(server.log.contains("failed 3 starts without being marked good; running the previous slot (1.0.0)"), "\(server.log)")
        }
        let status = try rollbackctl(bundle, state: state, "status", "--json")
        let json = try? JSONDecoder().decode(StatusDocument.self, from: Data(status.stdout.utf8))
        #expect(json?.source == "auto", "\(status)")
        #expect(json?.activeSlot == "previous", "\(status)")
    }

    // MARK: Running the bundles

    /// What the launcher and rollbackctl run with: the state directory of the check, fast
    /// crashes, nothing of the test's own environment.
    func runtimeEnvironment(state: String) -> [String: String] {
        ["SWITCHBACK_STATE_DIR": state, "PATH": "/usr/bin:/bin", "SWIFT_BACKTRACE": "enable=no"]
    }

    func rollbackctl(_ bundle: String, state: String, _ arguments: String...) throws -> ProcessResult {
        try runProcess(bundle + "/bin/rollbackctl", arguments, environment: runtimeEnvironment(state: state), deadline: 60)
    }

    /// Starts `bundle/bin/launcher --port PORT`, runs `body`, then stops the server with
    /// SIGTERM (SIGKILL if it outstays 20 s), even when `body` throws; expects exit code 0.
    func withServer(_ bundle: String, state: String, port: Int, environment: [String: String] = [:],
                    _ body: (Server) throws -> Void) throws {
        let logPath = directory + "/server-\(UUID().uuidString).log"
        let server = try Server(launcher: bundle + "/bin/launcher", port: port, logPath: logPath,
                                environment: runtimeEnvironment(state: state).merging(environment) { $1 })
        defer { server.stop() }
        try body(server)
        let code = server.stop()
        #expect(code == 0, "the server exits 0 on SIGTERM; its log:\n\(server.log)")
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }
}

/// The app's developer at a shell in the repository: each command runs with `sh -c` there,
/// with the test's environment minus Switchback's own variables. Throws with the output
/// unless it exits 0.
private struct Developer {
    let repository: String

    @discardableResult
    func run(_ command: String) throws -> ProcessResult {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SWITCHBACK_") }
        environment["SWIFT_BACKTRACE"] = "enable=no"
        // Release builds beside the other end-to-end tests: niced, so that their timings hold.
        let result = try runProcess("/usr/bin/nice", ["-n", "10", "/bin/sh", "-c", "cd \(quoted(repository)) && \(command)"],
                                    environment: environment, deadline: 1200)
        guard result.status == 0, !result.signaled else {
            throw TestFailure("`\(command)` in \(repository) failed: \(result)")
        }
        return result
    }
}

/// Where the `swift` that runs these tests is, for a PATH of its own.
private enum FileSystemPaths {
    static let swiftBin: String = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        return path.split(separator: ":").map(String.init).first { FileManager.default.isExecutableFile(atPath: $0 + "/swift") } ?? "/usr/bin"
    }()
}

private func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

/// The app under a launcher (or a supervising launcher), a real process, its output in a file.
private final class Server {
    let process: SpawnedProcess
    let port: Int
    let logPath: String

    init(launcher: String, port: Int, logPath: String, environment: [String: String]) throws {
        self.port = port
        self.logPath = logPath
        process = try SpawnedProcess(launcher, ["--port", "\(port)"], environment: environment,
                                     stdout: logPath, stderr: logPath, ownProcessGroup: true)
    }

    var pid: pid_t { process.pid }
    var hasExited: Bool { process.hasExited }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits up to 60 s for `GET /` to answer "AdoptedApp VERSION".
    func requireVersion(_ version: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expected = "AdoptedApp \(version)\n"
        var last = "no answer yet"
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            do {
                let reply = try HTTPClient.request("GET", "/", port: port)
                if reply.status == 200, reply.body == expected { return }
                last = "\(reply)"
            } catch {
                last = "\(error)"
            }
            // A launcher that exited (and was not supervised back up) answers no more.
            if process.hasExited { break }
            usleep(100_000)
        }
        Issue.record("127.0.0.1:\(port) did not answer \(expected.debugDescription) within 60 s; last: \(last); the server's log:\n\(log)",
                     sourceLocation: sourceLocation)
        throw ScenarioStopped()
    }

    func post(_ note: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reply = try HTTPClient.request("POST", "/notes", port: port, body: note)
        #expect(reply.status == 201, "POST /notes: \(reply)", sourceLocation: sourceLocation)
    }

    func notes() throws -> [String] {
        let reply = try HTTPClient.request("GET", "/notes", port: port)
        guard reply.status == 200 else { throw TestFailure("GET /notes: \(reply)") }
        return reply.body.split(separator: "\n").map(String.init)
    }

    /// SIGTERM, up to 20 s, then SIGKILL to its whole process group; returns the exit code
    /// (nil when a signal ended it). Safe to call again.
    @discardableResult
    func stop() -> Int32? {
        if !process.hasExited {
            kill(process.pid, SIGTERM)
            let deadline = Date().addingTimeInterval(20)
            while !process.hasExited, Date() < deadline { usleep(10_000) }
            if !process.hasExited {
                kill(-process.pid, SIGKILL)  // not reaped yet, so the group is still its own
                process.wait()
            }
        }
        return process.exitCode
    }

    deinit { stop() }
}

/// HTTP/1.1 over a raw socket to 127.0.0.1: one request, `Connection: close`, read to the end.
private enum HTTPClient {
    struct Reply: CustomStringConvertible {
        var status: Int
        var body: String
        var description: String { "HTTP \(status) \(body.debugDescription)" }
    }

    static func request(_ method: String, _ path: String, port: Int, body: String = "") throws -> Reply {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestFailure("connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }

        let payload = Array(body.utf8)
        let request = Array("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(payload.count)\r\n\r\n".utf8) + payload
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw TestFailure("send to 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
            sent += count
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw TestFailure("recv from 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            response += buffer[..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let headEnd = text.range(of: "\r\n\r\n") else { throw TestFailure("not an HTTP response: \(text.debugDescription)") }
        let statusLine = text[..<headEnd.lowerBound].split(separator: "\r\n").first?.split(separator: " ") ?? []
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw TestFailure("not an HTTP response: \(text.debugDescription)")
        }
        return Reply(status: status, body: String(text[headEnd.upperBound...]))
    }
}
