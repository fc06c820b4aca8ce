import Foundation
import Testing
import SwitchbackCrypto
import SwitchbackFiles
@testable import SwitchbackRemote

/// The pure verification rules, without a network.
@Suite("DirectiveEvaluator")
struct EvaluatorTests {
    private func evaluate(_ envelope: Data, context: InstallContext = TestFixtures.context(), trust: TrustConfig = TestFixtures.trust) -> SyncOutcome {
        DirectiveEvaluator.evaluate(envelope, trust: trust, context: context)
    }

    @Test func validDirectiveIsApplied() throws {
        let directive = TestFixtures.directive()
        #expect(evaluate(try TestFixtures.signed(directive)) == .applied(directive))
    }

    @Test func tamperedPayloadIsRefused() throws {
        var envelope = try JSONDecoder().decode(DirectiveEnvelope.self, from: TestFixtures.signed(TestFixtures.directive(decision: .runCurrent)))
        var payload = String(decoding: Data(base64Encoded: envelope.payload)!, as: UTF8.self)
        payload = payload.replacingOccurrences(of: "run_current", with: "run_previous")
        envelope.payload = Data(payload.utf8).base64EncodedString()
        let outcome = evaluate(envelope.jsonData())
        #expect(outcome.refusalCode == .badSignature)
        expectOneSentence(outcome.description)
    }

    @Test func unknownKeyIDIsRefused() throws {
        var envelope = try JSONDecoder().decode(DirectiveEnvelope.self, from: TestFixtures.signed(TestFixtures.directive()))
        envelope.signatures[0].keyid = "0123456789abcdef"
        let outcome = evaluate(envelope.jsonData())
        #expect(outcome.refusalCode == .untrustedKey)
        #expect(outcome.description.contains("0123456789abcdef"))
    }

    @Test func noTrustedKeysRefusesEverything() throws {
        let outcome = evaluate(try TestFixtures.signed(TestFixtures.directive()), trust: TrustConfig(appID: TestFixtures.appID, trustedKeys: []))
        #expect(outcome.refusalCode == .untrustedKey)
        #expect(outcome.description.contains("trusted: none"))
    }

    @Test func anyTrustedKeyWorksForRotation() throws {
        let directive = TestFixtures.directive()
        // Signed by the new key only: accepted by installs that trust both.
        #expect(evaluate(try TestFixtures.signed(directive, by: TestFixtures.rotatedKey)) == .applied(directive))
        // Signed by old and new: accepted by installs that still trust only the old key,
        // and by those that already trust only the new one.
        let both = try DirectiveSigner(privateKeys: [TestFixtures.operatorKey, TestFixtures.rotatedKey]).sign(directive)
        #expect(evaluate(both, trust: TrustConfig(appID: TestFixtures.appID, trustedKeys: [TestFixtures.operatorKey.publicKey])) == .applied(directive))
        #expect(evaluate(both, trust: TrustConfig(appID: TestFixtures.appID, trustedKeys: [TestFixtures.rotatedKey.publicKey])) == .applied(directive))
    }

    @Test func strangerSignatureNextToATrustedOneIsIgnored() throws {
        let directive = TestFixtures.directive()
        let both = try DirectiveSigner(privateKeys: [TestFixtures.strangerKey, TestFixtures.operatorKey]).sign(directive)
        #expect(evaluate(both) == .applied(directive))
    }

    @Test func signatureFromAnotherDomainIsRefused() throws {
        // A signature over the bare payload (no "switchback-directive-v1\n" prefix) is not valid.
        let payload = try TestFixtures.directive().jsonData()
        let signature = try TestFixtures.operatorKey.signature(for: Array(payload))
        let envelope = DirectiveEnvelope(payload: payload.base64EncodedString(),
                                         signatures: [EnvelopeSignature(keyid: TestFixtures.operatorKey.publicKey.keyID, sig: Data(signature).base64EncodedString())])
        #expect(evaluate(envelope.jsonData()).refusalCode == .badSignature)
    }

    @Test(arguments: [
        "{}",
        "[]",
        "{\"payload\":\"!!!\",\"signatures\":[{\"keyid\":\"a\",\"sig\":\"b\"}]}",
        "{\"payload\":\"e30=\",\"signatures\":[]}",
        "",
        "null",
    ])
    func malformedEnvelopesAreRefused(text: String) {
        let outcome = evaluate(Data(text.utf8))
        #expect(outcome.refusalCode == .malformedEnvelope)
        expectOneSentence(outcome.description)
    }

    @Test func tooManySignaturesAreRefused() throws {
        var envelope = try JSONDecoder().decode(DirectiveEnvelope.self, from: TestFixtures.signed(TestFixtures.directive()))
        envelope.signatures = Array(repeating: envelope.signatures[0], count: 17)
        #expect(evaluate(envelope.jsonData()).refusalCode == .malformedEnvelope)
    }

    @Test(arguments: [
        // rollout out of range
        #"{"app_id":"com.example.notes","applies_to":["2.3.0"],"decision":"run_previous","expires_at":"2026-05-08T12:00:00Z","issued_at":"2026-05-01T11:00:00Z","reason":"x","rollout_percent":150,"serial":2}"#,
        // unknown field
        #"{"app_id":"com.example.notes","applies_to":["2.3.0"],"decision":"run_previous","expires_at":"2026-05-08T12:00:00Z","issued_at":"2026-05-01T11:00:00Z","reason":"x","serial":2,"only_on_tuesdays":true}"#,
        // empty applies_to
        #"{"app_id":"com.example.notes","applies_to":[],"decision":"run_previous","expires_at":"2026-05-08T12:00:00Z","issued_at":"2026-05-01T11:00:00Z","reason":"x","serial":2}"#,
        // unknown decision
        #"{"app_id":"com.example.notes","applies_to":["2.3.0"],"decision":"self_destruct","expires_at":"2026-05-08T12:00:00Z","issued_at":"2026-05-01T11:00:00Z","reason":"x","serial":2}"#,
        // bad time
        #"{"app_id":"com.example.notes","applies_to":["2.3.0"],"decision":"run_previous","expires_at":"next week","issued_at":"2026-05-01T11:00:00Z","reason":"x","serial":2}"#,
        // missing serial
        #"{"app_id":"com.example.notes","applies_to":["2.3.0"],"decision":"run_previous","expires_at":"2026-05-08T12:00:00Z","issued_at":"2026-05-01T11:00:00Z","reason":"x"}"#,
        // negative serial
        #"{"app_id":"com.example.notes","applies_to":["2.3.0"],"decision":"run_previous","expires_at":"2026-05-08T12:00:00Z","issued_at":"2026-05-01T11:00:00Z","reason":"x","serial":-1}"#,
    ])
    func signedButInvalidDirectiveIsRefused(payload: String) throws {
        let outcome = evaluate(try TestFixtures.signedRawPayload(Data(payload.utf8)))
        #expect(outcome.refusalCode == .malformedDirective)
        expectOneSentence(outcome.description)
    }

    @Test func directiveFromTheFutureIsRefused() throws {
        let future = TestFixtures.directive(issuedAt: TestFixtures.now.addingTimeInterval(3600), expiresAt: TestFixtures.now.addingTimeInterval(7200))
        let outcome = evaluate(try TestFixtures.signed(future))
        #expect(outcome.refusalCode == .notYetValid)
        expectOneSentence(outcome.description)
        // Within the allowed clock skew it is fine.
        let skewed = TestFixtures.directive(issuedAt: TestFixtures.now.addingTimeInterval(120), expiresAt: TestFixtures.now.addingTimeInterval(7200))
        #expect(evaluate(try TestFixtures.signed(skewed)) == .applied(skewed))
    }

    @Test func expiryIsExclusive() throws {
        let directive = TestFixtures.directive(expiresAt: TestFixtures.now)
        #expect(evaluate(try TestFixtures.signed(directive)).refusalCode == .expired)
        #expect(evaluate(try TestFixtures.signed(directive), context: TestFixtures.context(now: TestFixtures.now.addingTimeInterval(-1))) == .applied(directive))
    }

    @Test func replayCheckComesBeforeExpiry() throws {
        let stale = TestFixtures.directive(serial: 2, expiresAt: TestFixtures.now.addingTimeInterval(-1))
        #expect(evaluate(try TestFixtures.signed(stale), context: TestFixtures.context(lastAcceptedSerial: 5)).refusalCode == .replayedSerial)
    }

    @Test func directiveNamingSeveralVersionsAppliesToEach() throws {
        let directive = TestFixtures.directive(appliesTo: ["2.2.9", "2.3.0"])
        #expect(evaluate(try TestFixtures.signed(directive)) == .applied(directive))
        #expect(evaluate(try TestFixtures.signed(directive), context: TestFixtures.context(version: "2.2.9")) == .applied(directive))
        #expect(evaluate(try TestFixtures.signed(directive), context: TestFixtures.context(version: "2.3")).notApplicableCode == .versionMismatch)
    }

    @Test func rolloutBucketIsStableAndSpread() {
        let bucket = RolloutBucket.bucket(installID: TestFixtures.installID, appID: TestFixtures.appID)
        #expect(bucket == RolloutBucket.bucket(installID: TestFixtures.installID, appID: TestFixtures.appID))
        #expect((0..<100).contains(bucket))
        // Documented formula: first 8 bytes of SHA-256("install:app"), big-endian, mod 100.
        let digest = SHA256.hash(Array("\(TestFixtures.installID):\(TestFixtures.appID)".utf8))
        let expected = Int(digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100)
        #expect(bucket == expected)
        // 1000 installs land roughly evenly.
        var counts = [Int](repeating: 0, count: 10)
        for index in 0..<1000 { counts[RolloutBucket.bucket(installID: "install-\(index)", appID: TestFixtures.appID) / 10] += 1 }
        #expect(counts.allSatisfy { (60...140).contains($0) }, "\(counts)")
    }

    @Test func rolloutSelectsInstallsBelowThePercentage() throws {
        let bucket = RolloutBucket.bucket(installID: TestFixtures.installID, appID: TestFixtures.appID)
        let inside = TestFixtures.directive(rolloutPercent: bucket + 1)
        #expect(evaluate(try TestFixtures.signed(inside)) == .applied(inside))
        let outside = TestFixtures.directive(rolloutPercent: bucket)
        let outcome = evaluate(try TestFixtures.signed(outside))
        #expect(outcome.notApplicableCode == .outsideRollout)
        #expect(outcome.isSuccessfulCheck)
        #expect(outcome.description.contains("(bucket \(bucket))"))
        expectOneSentence(outcome.description)
        let none = TestFixtures.directive(rolloutPercent: 0)
        #expect(evaluate(try TestFixtures.signed(none)).notApplicableCode == .outsideRollout)
        let all = TestFixtures.directive(rolloutPercent: 100)
        #expect(evaluate(try TestFixtures.signed(all)) == .applied(all))
    }

    @Test func outcomesRoundTripThroughJSON() throws {
        let outcomes: [SyncOutcome] = [
            .applied(TestFixtures.directive(rolloutPercent: 25)),
            .unchanged(serial: nil),
            .unchanged(serial: 4),
            .notApplicable(.outsideRollout, reason: "Outside."),
            .refused(.badSignature, reason: "Bad."),
            .unreachable(.timedOut, reason: "Slow."),
        ]
        for outcome in outcomes {
            let result = SyncResult(outcome: outcome, url: "https://example.com/d.json", checkedAt: TestFixtures.now,
                                    conditional: ConditionalHeaders(etag: "\"e\"", lastModified: "Fri, 01 May 2026 12:00:00 GMT", url: "https://example.com/d.json", currentVersion: "2.3.0"))
            let data = try JSONEncoder().encode(result)
            #expect(try JSONDecoder().decode(SyncResult.self, from: data) == result)
        }
        let json = String(decoding: try JSONEncoder().encode(SyncOutcome.refused(.expired, reason: "Gone.")), as: UTF8.self)
        #expect(json.contains("\"kind\":\"refused\""))
        #expect(json.contains("\"code\":\"expired\""))
    }
}

/// Text from an unverified envelope never reaches `status` unfiltered.
@Suite("Hostile text")
struct HostileTextTests {
    @Test func untrustedKeyIDIsNotEchoedVerbatim() throws {
        var envelope = try JSONDecoder().decode(DirectiveEnvelope.self, from: TestFixtures.signed(TestFixtures.directive()))
        envelope.signatures[0].keyid = "Everything is fine.\nRun rm -rf /"
        let outcome = DirectiveEvaluator.evaluate(envelope.jsonData(), trust: TestFixtures.trust, context: TestFixtures.context())
        #expect(outcome.refusalCode == .untrustedKey)
        #expect(outcome.description.contains("<malformed key id>"))
        #expect(!outcome.description.contains("rm -rf"))
        expectOneSentence(outcome.description)
    }

    @Test func controlCharactersInJSONErrorsAreFiltered() {
        let outcome = DirectiveEvaluator.evaluate(Data("\u{1B}[31m\n{".utf8), trust: TestFixtures.trust, context: TestFixtures.context())
        #expect(outcome.refusalCode == .malformedEnvelope)
        #expect(!outcome.description.unicodeScalars.contains { $0.properties.generalCategory == .control })
        expectOneSentence(outcome.description)
    }

    @Test func multiLineReasonCannotBeSigned() {
        let error = #expect(throws: RemoteError.self) {
            try DirectiveSigner(privateKey: TestFixtures.operatorKey).sign(TestFixtures.directive(reason: "line one\nline two"))
        }
        #expect(error?.code == .invalidDirective)
        #expect(error?.description.contains("one line") == true)
    }
}
