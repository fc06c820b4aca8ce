import Foundation
import SwitchbackAnalysis
import SwitchbackCore
import SwitchbackTestSupport
import Testing

/// One probe against a real HTTP server (python3's http.server) and against nothing.
@Suite struct HTTPProberTests {
    @Test func probesJudgeTheStatusAndMeasureTheLatency() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try "ok\n".write(toFile: root + "/health", atomically: true, encoding: .utf8)
        let port = try freeLoopbackPort()
        let (process, _) = pythonServerProcess(["-m", "http.server", "--bind", "127.0.0.1", "--directory", root, String(port)])
        try process.run()
        defer { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        #expect(waitFor(seconds: 20) { loopbackGet(port: port, path: "/health")?.status == 200 })

        func prober(_ path: String, statuses: String = "200-299") -> HTTPProber {
            HTTPProber(settings: AnalysisCheck.HTTP(url: "http://127.0.0.1:\(port)\(path)", successStatuses: HTTPStatusSet(statuses)!,
                                                    windowMilliseconds: 60_000))
        }
        let good = prober("/health").probe(at: 7)
        #expect(good.isSuccess && good.at == 7 && good.reason == nil)
        #expect((good.latencyMilliseconds ?? -1) > 0)
        let missing = prober("/missing").probe(at: 8)
        #expect(!missing.isSuccess && missing.reason == "status 404" && missing.latencyMilliseconds != nil)
        #expect(prober("/missing", statuses: "200-299,404").probe(at: 9).isSuccess)
    }

    @Test func aPortNothingListensOnIsAFailedProbe() throws {
        let port = try freeLoopbackPort()
        let probe = HTTPProber(settings: AnalysisCheck.HTTP(url: "http://127.0.0.1:\(port)/", windowMilliseconds: 1000)).probe(at: 1)
        #expect(probe == HTTPProbeWindow.Probe(at: 1, isSuccess: false, latencyMilliseconds: nil, reason: "connection refused"))
    }
}

func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(100_000)
    }
    return condition()
}

/// Foundation has a `Measurement` too: in this module, the name is the analysis's.
typealias Measurement = SwitchbackCore.Measurement
