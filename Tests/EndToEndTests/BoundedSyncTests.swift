import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Compression bombs, endless bodies and a silent server against the real
/// `rollbackctl-remote sync` process (issue 14, item 4): each ends within its deadline + 100 ms
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

        let run = try Self.measure(t.bundle + "/bin/rollbackctl-remote", ["sync"], state: t.state)
        let expected = hostile.expected(url)
        #expect(run.exitCode == 1, "\(run)")
        #expect(run.stderr == "Error: \(expected.reason)\n")
        #expect(run.seconds < Double(Self.deadlineMilliseconds) / 1000 + 0.1, "took \(run.seconds) s")
        #expect(run.maxRSSKilobytes < Self.memoryLimitKilobytes, "peak RSS \(run.maxRSSKilobytes) KB")
        let remote = try fleet.remote()
        #expect(remote["code"] as? String == expected.code)
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

    /// Runs `executable`, reaps it with wait4(2) and returns its exit code, stderr, wall time
    /// and peak resident set size (ru_maxrss, in kilobytes).
    static func measure(_ executable: String, _ arguments: [String], state: String) throws -> Measured {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ProcessInfo.processInfo.environment
        environment["SWITCHBACK_STATE_DIR"] = state
        environment.removeValue(forKey: "SWITCHBACK_SLOT")
        let start = DispatchTime.now()
        let pid = try spawn(executable, arguments, environment: environment) { actions in
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, directory + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }.get()
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let stderr = (try? String(contentsOfFile: directory + "/stderr", encoding: .utf8)) ?? ""
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Measured(exitCode: code, stderr: stderr, seconds: seconds, maxRSSKilobytes: Int(usage.ru_maxrss))
    }
}
