import Foundation
import Testing
import SwitchbackCrypto
@testable import SwitchbackRemote

/// Every hostile case from the issue, against the real hostile server on 127.0.0.1:
/// each ends refused or unreachable (or not applicable), with a one-sentence reason, within
/// the deadline plus one second, and never as `applied`.
@Suite("Hostile servers")
struct HostileServerTests {
    @Test func serverThatNeverAnswersTimesOut() async throws {
        try await withHostileServer { server in
            let (result, elapsed) = await timedSync(server.url("/hang"))
            #expect(result.outcome.unreachableCode == .timedOut)
            #expect(result.description.contains("within 2 s"))
            #expect(!result.isSuccessfulCheck)
            expectOneSentence(result.description)
            expectWithinDeadline(elapsed)
            #expect(elapsed >= .milliseconds(1900))
        }
    }

    @Test func serverThatNeverAnswersHitsTheDefaultFiveSecondDeadline() async throws {
        try await withHostileServer { server in
            let (result, elapsed) = await timedSync(server.url("/hang"), options: FetchOptions())
            #expect(result.outcome.unreachableCode == .timedOut)
            #expect(result.description.contains("within 5 s"))
            expectWithinDeadline(elapsed, FetchOptions())
            #expect(elapsed >= .milliseconds(4900))
        }
    }

    @Test func subSecondDeadlineIsEnforced() async throws {
        // URLSession on Linux would round 0.5 s down to 0 (fail at once) or ignore it.
        try await withHostileServer { server in
            let options = FetchOptions(deadline: .milliseconds(500))
            let (result, elapsed) = await timedSync(server.url("/hang"), options: options)
            #expect(result.outcome.unreachableCode == .timedOut)
            #expect(result.description.contains("within 0.5 s"))
            #expect(elapsed >= .milliseconds(450))
            expectWithinDeadline(elapsed, options)
        }
    }

    @Test func serverThatDripsOneBytePerSecondTimesOut() async throws {
        try await withHostileServer { server in
            let (result, elapsed) = await timedSync(server.url("/drip"))
            #expect(result.outcome.unreachableCode == .timedOut)
            #expect(result.description.contains("No complete answer"))
            expectOneSentence(result.description)
            expectWithinDeadline(elapsed)
        }
    }

    @Test(arguments: [500, 404, 403, 503])
    func errorStatusIsUnreachable(status: Int) async throws {
        try await withHostileServer { server in
            let (result, elapsed) = await timedSync(server.url("/status/\(status)"))
            #expect(result.outcome.unreachableCode == .httpStatus)
            #expect(result.description.contains("HTTP \(status)"))
            expectOneSentence(result.description)
            expectWithinDeadline(elapsed)
        }
    }

    @Test func notFoundSaysToPublishADirective() async throws {
        try await withHostileServer { server in
            let (result, _) = await timedSync(server.url("/status/404"))
            #expect(result.description.contains("404 Not Found"))
            #expect(result.description.contains("rollbackctl sign"))
        }
    }

    @Test func fiftyMegabyteBodyIsRefusedFromContentLength() async throws {
        try await withHostileServer { server in
            let (result, elapsed) = await timedSync(server.url("/big"))
            #expect(result.outcome.refusalCode == .bodyTooLarge)
            #expect(result.description.contains("(52428800 bytes)"))
            #expect(result.description.contains("65536-byte limit"))
            expectOneSentence(result.description)
            expectWithinDeadline(elapsed)
        }
    }

    @Test func fiftyMegabyteBodyWithoutContentLengthIsCutOff() async throws {
        try await withHostileServer { server in
            let (result, elapsed) = await timedSync(server.url("/big-unannounced"))
            #expect(result.outcome.refusalCode == .bodyTooLarge)
            #expect(result.description.contains("65536-byte limit"))
            expectOneSentence(result.description)
            expectWithinDeadline(elapsed)
        }
    }

    @Test func invalidJSONIsRefused() async throws {
        try await withTemporaryDirectory { root in
            try Data("<html>this is not a directive</html>".utf8).write(to: root.appendingPathComponent("directive.json"))
            try await withHostileServer(root: root) { server in
                let (result, elapsed) = await timedSync(server.url("/files/directive.json"))
                #expect(result.outcome.refusalCode == .malformedEnvelope)
                #expect(result.description == "The served file is not a directive envelope (not valid JSON); publish the file written by 'rollbackctl sign'.")
                expectOneSentence(result.description)
                expectWithinDeadline(elapsed)
            }
        }
    }

    /// Serves `envelope` as /files/directive.json and syncs it.
    private func serve(_ envelope: Data, context: InstallContext = TestFixtures.context()) async throws -> (SyncResult, Duration) {
        try await withTemporaryDirectory { root in
            try envelope.write(to: root.appendingPathComponent("directive.json"))
            return try await withHostileServer(root: root) { server in
                await timedSync(server.url("/files/directive.json"), context: context)
            }
        }
    }

    @Test func badSignatureIsRefused() async throws {
        var envelope = try JSONDecoder().decode(DirectiveEnvelope.self, from: TestFixtures.signed(TestFixtures.directive()))
        var signature = Data(base64Encoded: envelope.signatures[0].sig)!
        signature[10] ^= 0x01
        envelope.signatures[0].sig = signature.base64EncodedString()
        let (result, elapsed) = try await serve(envelope.jsonData())
        #expect(result.outcome.refusalCode == .badSignature)
        #expect(result.description.contains(TestFixtures.operatorKey.publicKey.keyID))
        expectOneSentence(result.description)
        expectWithinDeadline(elapsed)
    }

    @Test func signatureByUntrustedKeyIsRefused() async throws {
        let (result, elapsed) = try await serve(TestFixtures.signed(TestFixtures.directive(), by: TestFixtures.strangerKey))
        #expect(result.outcome.refusalCode == .untrustedKey)
        #expect(result.description.contains(TestFixtures.strangerKey.publicKey.keyID))
        #expect(result.description.contains("does not trust"))
        expectOneSentence(result.description)
        expectWithinDeadline(elapsed)
    }

    @Test func replayedOlderSerialIsRefused() async throws {
        let old = try TestFixtures.signed(TestFixtures.directive(serial: 4))
        let (result, elapsed) = try await serve(old, context: TestFixtures.context(lastAcceptedSerial: 5))
        #expect(result.outcome.refusalCode == .replayedSerial)
        #expect(result.description.contains("serial 4 is older than the last accepted serial 5"))
        expectOneSentence(result.description)
        expectWithinDeadline(elapsed)
    }

    @Test func expiredDirectiveIsRefusedAndNotApplied() async throws {
        let expired = TestFixtures.directive(serial: 9, issuedAt: TestFixtures.now.addingTimeInterval(-7200), expiresAt: TestFixtures.now.addingTimeInterval(-60))
        let (result, elapsed) = try await serve(TestFixtures.signed(expired), context: TestFixtures.context(lastAcceptedSerial: 3))
        #expect(result.outcome.refusalCode == .expired)
        #expect(result.outcome.appliedDirective == nil)
        #expect(result.description.contains("expired at 2026-05-01T11:59:00Z"))
        expectOneSentence(result.description)
        expectWithinDeadline(elapsed)
    }

    @Test func directiveForAnotherAppIsRefused() async throws {
        let (result, elapsed) = try await serve(TestFixtures.signed(TestFixtures.directive(appID: "com.example.other")))
        #expect(result.outcome.refusalCode == .wrongApp)
        #expect(result.description.contains("'com.example.other', not 'com.example.notes'"))
        expectOneSentence(result.description)
        expectWithinDeadline(elapsed)
    }

    @Test func directiveForAnotherCurrentVersionDoesNotApply() async throws {
        // A rollback aimed at the bad 2.3.0 must not touch an install already on 2.3.1.
        let (result, elapsed) = try await serve(TestFixtures.signed(TestFixtures.directive()), context: TestFixtures.context(version: TestFixtures.fixedVersion))
        #expect(result.outcome.notApplicableCode == .versionMismatch)
        #expect(result.outcome.appliedDirective == nil)
        #expect(result.description.contains("is for current version 2.3.0, not this install's 2.3.1"))
        expectOneSentence(result.description)
        expectWithinDeadline(elapsed)
    }

    @Test func redirectLoopIsUnreachable() async throws {
        try await withHostileServer { server in
            let (result, elapsed) = await timedSync(server.url("/loop/a"))
            #expect(result.outcome.unreachableCode == .tooManyRedirects)
            #expect(result.description.contains("more than 3 times"))
            expectOneSentence(result.description)
            expectWithinDeadline(elapsed)
        }
    }

    @Test func upToThreeRedirectsAreFollowed() async throws {
        try await withTemporaryDirectory { root in
            try TestFixtures.signed(TestFixtures.directive()).write(to: root.appendingPathComponent("directive.json"))
            try await withHostileServer(root: root) { server in
                let (three, _) = await timedSync(server.url("/chain/2"))  // 3 redirects
                #expect(three.outcome.appliedDirective?.serial == 1)
                let (four, _) = await timedSync(server.url("/chain/3"))   // 4 redirects
                #expect(four.outcome.unreachableCode == .tooManyRedirects)
            }
        }
    }

    @Test func redirectToPlainHTTPElsewhereIsRefused() async throws {
        try await withHostileServer { server in
            let target = "http://directives.example.com/app.json"
            let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let (result, elapsed) = await timedSync(server.url("/redirect?to=\(encoded)"))
            #expect(result.outcome.refusalCode == .insecureRedirect)
            #expect(result.description.contains("http://directives.example.com/app.json"))
            #expect(!result.description.contains("?to="))  // queries are never shown
            expectOneSentence(result.description)
            expectWithinDeadline(elapsed)
        }
    }

    @Test func connectionRefusedIsUnreachable() async throws {
        let port = try unusedLoopbackPort()
        let (result, elapsed) = await timedSync(URL(string: "http://127.0.0.1:\(port)/directive.json")!)
        #expect(result.outcome.unreachableCode == .connectionFailed)
        #expect(result.description.contains("connection refused"))
        expectOneSentence(result.description)
        expectWithinDeadline(elapsed)
    }

    @Test func cancellingTheTaskEndsTheFetchAtOnce() async throws {
        try await withHostileServer { server in
            let url = server.url("/hang")
            let clock = ContinuousClock()
            let start = clock.now
            let task = Task {
                await sync(url: url, trust: TestFixtures.trust, context: TestFixtures.context(), options: FetchOptions(deadline: .seconds(30)))
            }
            try await Task.sleep(for: .milliseconds(300))
            task.cancel()
            let result = await task.value
            #expect(result.outcome.unreachableCode == .cancelled)
            #expect(clock.now - start < .seconds(2))
        }
    }

    @Test func failedFetchKeepsThePreviousValidators() async throws {
        let previous = ConditionalHeaders(etag: "\"abc\"", lastModified: nil, url: "http://127.0.0.1:1/x", currentVersion: TestFixtures.badVersion)
        try await withHostileServer { server in
            let (result, _) = await timedSync(server.url("/status/500"), conditional: previous)
            #expect(result.conditional == previous)
        }
    }
}

/// A loopback TCP port that nothing listens on (bound, read, closed).
func unusedLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestServerError(message: "socket failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
            bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
        }
    }
    guard bound else { throw TestServerError(message: "bind failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// TLS: https to a server that speaks plain http fails the handshake, within the deadline.
@Suite("TLS failures")
struct TLSFailureTests {
    @Test func httpsToAPlainServerIsUnreachable() async throws {
        try await withHostileServer { server in
            let url = URL(string: "https://127.0.0.1:\(server.port)/files/directive.json")!
            let (result, elapsed) = await timedSync(url)
            #expect(result.outcome.unreachableCode == .tlsFailed || result.outcome.unreachableCode == .connectionFailed, "\(result.outcome)")
            expectOneSentence(result.description)
            expectWithinDeadline(elapsed)
        }
    }
}

/// The deadline or a cancellation may strike while URLSession waits for the redirect
/// decision; corelibs traps ("Received callback for HTTP redirection, but we're not waiting
/// for it") if the task is cancelled in that window. Hammer the window.
@Suite("Deadline during redirects")
struct DeadlineDuringRedirectTests {
    @Test func deadlineInTheMiddleOfARedirectStormNeverCrashes() async throws {
        try await withHostileServer { server in
            let url = server.url("/slowloop/a")
            let options = FetchOptions(deadline: .milliseconds(150), maxRedirects: 20)
            try await withThrowingTaskGroup(of: SyncResult.self) { group in
                for _ in 0..<40 {
                    group.addTask {
                        await sync(url: url, trust: TestFixtures.trust, context: TestFixtures.context(), options: options)
                    }
                }
                for try await result in group {
                    #expect(result.outcome.unreachableCode == .timedOut, "\(result.outcome)")
                }
            }
        }
    }

    @Test func cancellationInTheMiddleOfARedirectStormNeverCrashes() async throws {
        try await withHostileServer { server in
            let url = server.url("/slowloop/a")
            let options = FetchOptions(deadline: .seconds(10), maxRedirects: 20)
            for delay in stride(from: 15, through: 150, by: 15) {
                let task = Task { await sync(url: url, trust: TestFixtures.trust, context: TestFixtures.context(), options: options) }
                try await Task.sleep(for: .milliseconds(delay))
                task.cancel()
                let result = await task.value
                #expect(result.outcome.unreachableCode == .cancelled, "\(result.outcome)")
            }
        }
    }
}
