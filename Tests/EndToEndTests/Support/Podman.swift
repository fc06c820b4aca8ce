import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The container engine the deployment tests drive: Debian's podman, run as a process with
/// the project's containers.conf (runc; default ulimits within this machine's hard limits:
/// scripts/lib/containers.conf). A test that needs it fails, never skips, when it is missing.
enum Podman {
    /// The checkout's root (the tests read the Dockerfile and the docs from it).
    static let repository: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The environment every podman command gets: this process's, with CONTAINERS_CONF set
    /// (scripts/test sets it; the project's file when it is unset).
    static let environment: [String: String] = {
        var environment = ProcessInfo.processInfo.environment
        if environment["CONTAINERS_CONF"] == nil { environment["CONTAINERS_CONF"] = repository + "/scripts/lib/containers.conf" }
        return environment
    }()

    /// Fails the test (never skips) unless podman runs here.
    static func requireEngine() throws {
        guard let result = try? runProcess("/usr/bin/env", ["podman", "--version"], environment: environment), result.status == 0 else {
            Issue.record("podman is missing: run the tests with scripts/test, which installs podman and runc (scripts/lib/ensure-packages) and makes the base images (scripts/lib/base-image).")
            throw CancellationError()
        }
    }

    /// The base image scripts/test made and named in `variable` (scripts/lib/base-image),
    /// checked to exist; the test fails without it.
    static func baseImage(_ variable: String, made option: String) throws -> String {
        try requireEngine()
        guard let name = ProcessInfo.processInfo.environment[variable], !name.isEmpty else {
            Issue.record("\(variable) is not set: run the tests with scripts/test, which makes it with scripts/lib/base-image \(option).")
            throw CancellationError()
        }
        guard try run("image", "exists", name).status == 0 else {
            Issue.record("\(variable) names \(name), which podman does not have: run scripts/lib/base-image \(option).")
            throw CancellationError()
        }
        return name
    }

    /// `podman ARGUMENTS...`, whatever its exit.
    static func run(_ arguments: String..., deadline: Double = 180) throws -> ProcessResult {
        try run(arguments, deadline: deadline)
    }

    static func run(_ arguments: [String], deadline: Double = 180) throws -> ProcessResult {
        try runProcess("/usr/bin/env", ["podman"] + arguments, environment: environment, deadline: deadline)
    }

    /// `podman ARGUMENTS...`'s outcome as text, for a failure's message.
    static func say(_ arguments: String...) -> String {
        (try? run(arguments, deadline: 30))?.description ?? "(podman \(arguments.joined(separator: " ")) could not run)"
    }

    /// `podman ARGUMENTS...`, which must exit 0; its stdout without the last newline.
    @discardableResult
    static func check(_ arguments: String..., deadline: Double = 180) throws -> String {
        try check(arguments, deadline: deadline)
    }

    @discardableResult
    static func check(_ arguments: [String], deadline: Double = 180) throws -> String {
        let result = try run(arguments, deadline: deadline)
        guard result.status == 0 else { throw TestFailure("podman \(arguments.joined(separator: " ")) failed: \(result)") }
        return result.stdout.hasSuffix("\n") ? String(result.stdout.dropLast()) : result.stdout
    }

    /// `bash -c SCRIPT` inside `container` (as the image's user unless `user` is given).
    static func bash(_ container: String, _ script: String, user: String? = nil, deadline: Double = 120) throws -> ProcessResult {
        try run(["exec"] + (user.map { ["--user", $0] } ?? []) + [container, "bash", "-c", script], deadline: deadline)
    }

    /// A GET of `path` on 127.0.0.1:`port` made inside `container` with bash's /dev/tcp (the
    /// images have no HTTP client): the status line and body, or nil when nothing answered.
    static func get(_ container: String, port: Int, path: String = "/") throws -> (status: Int, body: String)? {
        let script = "exec 3<>/dev/tcp/127.0.0.1/\(port) && printf 'GET \(path) HTTP/1.0\\r\\nConnection: close\\r\\n\\r\\n' >&3 && timeout 5 cat <&3"
        let result = try bash(container, script)
        guard result.stdout.hasPrefix("HTTP/"), let head = result.stdout.split(separator: "\r\n", maxSplits: 1).first else { return nil }
        let parts = head.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        let body = result.stdout.range(of: "\r\n\r\n").map { String(result.stdout[$0.upperBound...]) } ?? ""
        return (status, body)
    }

    /// The sample server's heartbeat in `container` (written five times a second by `serve`
    /// into the state directory's data/, by every build, with or without `--http`): its
    /// version, slot, pid and state ("running", "stopped"), or nil when there is none.
    static func heartbeat(_ container: String, stateDirectory: String) -> [String: String]? {
        guard let result = try? run(["exec", container, "cat", stateDirectory + "/data/heartbeat"], deadline: 30),
              result.status == 0 else { return nil }
        var fields: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    /// Waits until the sample server in `container` runs `version`; the pid of its process.
    /// With `restartedFrom` (a heartbeat of the process before), only a new process counts: a
    /// new pid, or in a container where the server is always PID 1, fewer beats.
    static func waitForServer(_ container: String, stateDirectory: String, version: String,
                              restartedFrom before: [String: String]? = nil, within limit: Double = 60) -> [String: String]? {
        var found: [String: String]?
        _ = waitUntil(seconds: limit) {
            guard let beat = heartbeat(container, stateDirectory: stateDirectory), beat["version"] == version,
                  beat["state"] == "running" else { return false }
            if let before, beat["pid"] == before["pid"], Int(beat["beats"] ?? "") ?? 0 >= Int(before["beats"] ?? "") ?? 0 { return false }
            found = beat
            return true
        }
        return found
    }

    /// The image's size as podman reports it, in bytes.
    static func imageSize(_ image: String) throws -> Int {
        guard let size = Int(try check("image", "inspect", "--format", "{{.Size}}", image)) else {
            throw TestFailure("podman image inspect gave no size for \(image)")
        }
        return size
    }

    /// A name no other run uses at the same time (containers, volumes, pods).
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }
}

/// A fenced block of a documentation page: the first one of `language` after the line that
/// starts with `heading`. The tests run what the docs show, not a copy of it.
func documentedBlock(_ page: String, after heading: String, language: String) throws -> String {
    let text = try String(contentsOfFile: Podman.repository + "/" + page, encoding: .utf8)
    guard let start = text.range(of: "\n" + heading) else { throw TestFailure("\(page) has no heading \(heading)") }
    guard let open = text.range(of: "```" + language + "\n", range: start.upperBound..<text.endIndex),
          let close = text.range(of: "\n```", range: open.upperBound..<text.endIndex) else {
        throw TestFailure("\(page) has no ```\(language) block after \(heading)")
    }
    return String(text[open.upperBound..<close.lowerBound]) + "\n"
}

/// Seconds since `start`, on the monotonic clock.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    let (whole, attoseconds) = elapsed.components
    return Double(whole) + Double(attoseconds) / 1e18
}
