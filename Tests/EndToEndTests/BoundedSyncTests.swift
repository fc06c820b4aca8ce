import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Compression bombs, endless bodies and a silent server against the real
/// `rollbackctl-remote sync` process (issue 14, item 4): each ends at its deadline (asserted within deadline + 1 s, for a loaded machine)
/// with a peak RSS (wait4's ru_maxrss: the whole process, libraries included) under 32 MB,
/// exits 1 with its one-sentence refusal, and leaves the decision alone.
@Suite struct BoundedSyncTests {
    enum Hostile: String, CaseIterable, CustomTestStringConvertible {
        case gzipBomb = "/gzip-bomb"
        case gzipBombStream = "/gzip-bomb-stream"
        case endlessChunked = "/endless-chunked"
        case fiftyMegabytesUnannounced = "/big-unannounced"
        case neverAnswers = "/hang"

        var testDescription: String { rawValue }

        func expected(_ url: String) -> (code: String, reason: String) {
            switch self {
            case .gzipBomb, .gzipBombStream:
                return ("unrequested_encoding", "The answer from \(url) is encoded (Content-Encoding: gzip) though only identity was accepted; serve the directive file uncompressed.")
            case .endlessChunked, .fiftyMegabytesUnannounced:
                return ("body_too_large", "The answer from \(url) is over the 65536-byte limit; serve only the signed directive file there.")
            case .neverAnswers:
                return ("timed_out", "No complete answer from \(url) within 1 s; the decision stays.")
            }
        }
    }

    static let deadlineMilliseconds = 1000
    static let memoryLimitKilobytes = 32 * 1024

    @Test(arguments: Hostile.allCases)
    func hostileBodiesEndWithinTheDeadlineUnder32MB(_ hostile: Hostile) throws {
        let fleet = try RemoteDirectiveTests.Fleet(deadlineMilliseconds: Self.deadlineMilliseconds)
        let t = fleet.t
        let server = try LocalHTTPServer.hostile(root: fleet.www)
        defer { server.stop() }
        let url = server.url(hostile.rawValue)
        try t.setManifestSetting("remote.url", url)
        let stateBefore = try? String(contentsOfFile: t.state + "/state", encoding: .utf8)

        // What the program costs before and after any fetch (start, manifest, state files),
        // on this machine now: a sync refused by the URL policy before any connection.
        let baseline = try Self.measure(t.bundle + "/bin/rollbackctl-remote", ["sync", "--url", "ftp://127.0.0.1/directive.json"], state: t.state)
        try #require(baseline.exitCode == 1, "\(baseline)")
        let run = try Self.measure(t.bundle + "/bin/rollbackctl-remote", ["sync"], state: t.state)
        let expected = hostile.expected(url)
        #expect(run.exitCode == 1, "\(run)")
        #expect(run.stderr == "Error: \(expected.reason)\n")
        // The fetch ends at its deadline, not at the server's pleasure (a hanging server never
        // ends, a bomb never stops). The bound is generous: this runs beside 800 other tests on
        // two cores, and a run 124 ms late once failed a bound of deadline + 100 ms. The
        // deadline's precision is `scripts/bench`'s to show, not a test's.
        #expect(run.seconds < Double(Self.deadlineMilliseconds) / 1000 + 1 + baseline.seconds, "took \(run.seconds) s (baseline \(baseline.seconds) s)")
        #expect(run.maxRSSKilobytes < Self.memoryLimitKilobytes, "peak RSS \(run.maxRSSKilobytes) KB")
        #expect(baseline.maxRSSKilobytes < Self.memoryLimitKilobytes, "baseline peak RSS \(baseline.maxRSSKilobytes) KB")
        let remote = try fleet.remote()
        #expect(remote.code == expected.code)
        #expect((try? String(contentsOfFile: t.state + "/state", encoding: .utf8)) == stateBefore)
        #expect(try fleet.activeSlot() == "current")
    }

    struct Measured: CustomStringConvertible {
        var exitCode: Int32
        var stderr: String
        var seconds: Double
        var maxRSSKilobytes: Int

        var description: String { "exit \(exitCode), \(seconds) s, \(maxRSSKilobytes) KB\nstderr: \(stderr)" }
    }

    /// Runs `executable` as the child of a small python3 parent that reaps it with wait4(2)
    /// and reports its exit code, wall time (spawn to reap) and peak resident set size
    /// (ru_maxrss, kilobytes).
    ///
    /// Not posix_spawn from this test process: posix_spawn clones with CLONE_VM, and execve
    /// folds the outgoing address space's high-water mark into the process's ru_maxrss, so a
    /// child spawned from a 40 MB test runner "peaks" at 40 MB before it runs a single
    /// instruction. The python parent is ~10 MB, under anything measured here.
    static func measure(_ executable: String, _ arguments: [String], state: String) throws -> Measured {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = """
        import json, os, sys, time
        out, err = sys.argv[1], sys.argv[2]
        fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        start = time.monotonic()
        pid = os.posix_spawn(sys.argv[3], sys.argv[3:], os.environ, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, fd, 2)])
        _, status, usage = os.wait4(pid, 0)
        seconds = time.monotonic() - start
        code = os.waitstatus_to_exitcode(status)
        with open(out, "w") as f:
            json.dump({"exit": code, "seconds": seconds, "maxrss": usage.ru_maxrss}, f)
        """
        var environment = ProcessInfo.processInfo.environment
        environment["SWITCHBACK_STATE_DIR"] = state
        environment.removeValue(forKey: "SWITCHBACK_SLOT")
        let result = try runProcess("/usr/bin/env", ["python3", "-c", script, directory + "/measured.json", directory + "/stderr", executable] + arguments,
                                    environment: environment)
        guard result.status == 0, let data = FileManager.default.contents(atPath: directory + "/measured.json"),
              let json = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw TestFailure("measuring \(executable) failed: \(result)")
        }
        let stderr = (try? String(contentsOfFile: directory + "/stderr", encoding: .utf8)) ?? ""
        return Measured(exitCode: Int32(json["exit"] as? Int ?? -1), stderr: stderr, seconds: json["seconds"] as? Double ?? -1,
                        maxRSSKilobytes: json["maxrss"] as? Int ?? -1)
    }
}
