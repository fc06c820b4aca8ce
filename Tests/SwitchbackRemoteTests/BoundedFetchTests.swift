import Foundation
import Testing
@testable import SwitchbackRemote

/// Compression bombs and endless bodies (issue 14, item 4), against the real hostile server:
/// nothing is ever inflated, at most the cap is held, and each ends far inside its deadline
/// (the whole-process memory bound is checked end to end, in EndToEndTests/BoundedSyncTests).
@Suite("Bounded fetch")
struct BoundedFetchTests {
    @Test(arguments: ["/gzip-bomb", "/gzip-bomb-stream"])
    func aGzipBodyIsRefusedWithoutInflatingIt(path: String) async throws {
        try await withHostileServer { server in
            let options = FetchOptions(deadline: .seconds(1))
            let (result, elapsed) = await timedSync(server.url(path), options: options)
            #expect(result.outcome.refusalCode == .unrequestedEncoding, "\(result.outcome)")
            #expect(result.description == "The answer from \(server.url(path).absoluteString) is encoded (Content-Encoding: gzip) though only identity was accepted; serve the directive file uncompressed.")
            #expect(!result.isSuccessfulCheck)
            expectOneSentence(result.description)
            #expect(elapsed < .seconds(2), "took \(elapsed)")  // the deadline, with room for a loaded machine
        }
    }

    @Test func anEndlessChunkedBodyIsCutOffAtTheCap() async throws {
        try await withHostileServer { server in
            let options = FetchOptions(deadline: .seconds(1))
            let (result, elapsed) = await timedSync(server.url("/endless-chunked"), options: options)
            #expect(result.outcome.refusalCode == .bodyTooLarge)
            #expect(result.description.contains("65536-byte limit"))
            expectOneSentence(result.description)
            #expect(elapsed < .seconds(2), "took \(elapsed)")  // the deadline, with room for a loaded machine
        }
    }

    @Test func headersPast64KiBAreRefused() async throws {
        try await withHostileServer { server in
            let (result, elapsed) = await timedSync(server.url("/huge-headers"))
            #expect(result.outcome.refusalCode == .bodyTooLarge)
            #expect(result.description == "The answer from \(server.url("/huge-headers").absoluteString) has more than 64 KiB of headers; serve only the signed directive file there.")
            expectOneSentence(result.description)
            expectWithinDeadline(elapsed)
        }
    }

    @Test func theRequestAsksForIdentityAndHoldsAtMostTheCap() async throws {
        // A cap of 1000 bytes against a 50 MB body: the fetcher's own buffer is the cap.
        try await withHostileServer { server in
            let fetcher = DirectiveFetcher(options: FetchOptions(deadline: .seconds(2), maxBodyBytes: 1000))
            let result = await fetcher.fetch(server.url("/big-unannounced"))
            guard case .failed(let outcome) = result else { Issue.record("fetched \(result)"); return }
            #expect(outcome.refusalCode == .bodyTooLarge)
            #expect(outcome.description.contains("1000-byte limit"))
        }
    }

    @Test func aCancelledFetchEndsAtOnce() async throws {
        try await withHostileServer { server in
            let clock = ContinuousClock()
            let start = clock.now
            let task = Task { await DirectiveFetcher(options: FetchOptions(deadline: .seconds(10))).fetch(server.url("/hang")) }
            try await Task.sleep(for: .milliseconds(200))
            task.cancel()
            let result = await task.value
            #expect(clock.now - start < .seconds(2))
            guard case .failed(let outcome) = result else { Issue.record("fetched \(result)"); return }
            #expect(outcome.unreachableCode == .cancelled)
        }
    }
}

@Suite("Validators and replay floor")
struct FreshnessRuleTests {
    @Test func validatorsOfAFileModifiedWithinTwoSecondsOfTheAnswerAreNotKept() {
        let date = "Sun, 22 Nov 2026 22:00:10 GMT"
        #expect(ConditionalHeaders.areTrustworthy(lastModified: "Sun, 22 Nov 2026 22:00:07 GMT", date: date))
        #expect(!ConditionalHeaders.areTrustworthy(lastModified: "Sun, 22 Nov 2026 22:00:08 GMT", date: date))
        #expect(!ConditionalHeaders.areTrustworthy(lastModified: "Sun, 22 Nov 2026 22:00:10 GMT", date: date))
        #expect(!ConditionalHeaders.areTrustworthy(lastModified: "Sun, 22 Nov 2026 22:00:20 GMT", date: date))
        #expect(!ConditionalHeaders.areTrustworthy(lastModified: "Sun, 22 Nov 2026 22:00:00 GMT", date: nil))
        #expect(!ConditionalHeaders.areTrustworthy(lastModified: "yesterday", date: date))
        #expect(ConditionalHeaders.areTrustworthy(lastModified: nil, date: date))
    }

    @Test func httpDatesParse() {
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 UTC") == nil)
        #expect(HTTPDate.parse("Sun, 32 Nov 1994 08:49:37 GMT") == nil)
    }

    @Test func aSerialBelowTheHighestSeenIsAReplayEvenIfNeverApplied() throws {
        // Serial 12 was seen (outside the rollout, say) while serial 10 is the one applied.
        let context = InstallContext(currentVersion: TestFixtures.badVersion, installID: TestFixtures.installID,
                                     lastAcceptedSerial: 10, highestSeenSerial: 12, now: TestFixtures.now)
        let replay = try TestFixtures.signed(TestFixtures.directive(serial: 11))
        let (outcome, authentic) = DirectiveEvaluator.judge(replay, trust: TestFixtures.trust, context: context)
        #expect(outcome.refusalCode == .replayedSerial)
        #expect(outcome.description == "Directive serial 11 is older than serial 12, which this install has already verified (a replay or a stale copy); publish a directive with a serial above 12.")
        #expect(authentic?.serial == 11)
        expectOneSentence(outcome.description)

        let same = try TestFixtures.signed(TestFixtures.directive(serial: 12))
        #expect(DirectiveEvaluator.evaluate(same, trust: TestFixtures.trust, context: context).refusalCode == nil)
    }

    @Test func anUnsignedBodyIsNotAuthentic() {
        let (outcome, authentic) = DirectiveEvaluator.judge(Data("{}".utf8), trust: TestFixtures.trust, context: TestFixtures.context())
        #expect(outcome.refusalCode == .malformedEnvelope)
        #expect(authentic == nil)
    }
}
