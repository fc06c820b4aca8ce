import Foundation
import Testing
import SwitchbackCrypto
import SwitchbackFiles
@testable import SwitchbackRemote

/// Key files, signing and the wire format.
@Suite("Keys and signing")
struct SigningTests {
    @Test func keygenWritesAPrivateKeyOnlyTheOwnerCanRead() async throws {
        try await withTemporaryDirectory { directory in
            let keys = try DirectiveKeyFiles.generate(in: directory.appendingPathComponent("keys"))
            let privateMode = try FileManager.default.attributesOfItem(atPath: keys.privateKeyURL.path)[.posixPermissions] as? Int
            let publicMode = try FileManager.default.attributesOfItem(atPath: keys.publicKeyURL.path)[.posixPermissions] as? Int
            let directoryMode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("keys").path)[.posixPermissions] as? Int
            #expect(privateMode == 0o600)
            #expect(publicMode == 0o644)
            #expect(directoryMode == 0o700)
            #expect(keys.privateKeyURL.lastPathComponent == "directive.key")
            #expect(keys.publicKeyURL.lastPathComponent == "directive.pub")
            let privatePEM = try String(contentsOf: keys.privateKeyURL, encoding: .utf8)
            let publicPEM = try String(contentsOf: keys.publicKeyURL, encoding: .utf8)
            #expect(privatePEM.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
            #expect(publicPEM.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
            #expect(try Ed25519PublicKey(pemRepresentation: publicPEM).keyID == keys.keyID)
            #expect(keys.keyID.count == 16)
        }
    }

    @Test func keygenRefusesToOverwrite() async throws {
        try await withTemporaryDirectory { directory in
            let first = try DirectiveKeyFiles.generate(in: directory)
            let before = try Data(contentsOf: first.privateKeyURL)
            let error = #expect(throws: RemoteError.self) { try DirectiveKeyFiles.generate(in: directory) }
            #expect(error?.code == .keyFileExists)
            #expect(error?.path == first.privateKeyURL.path)
            #expect(error?.description.contains("Refusing to overwrite") == true)
            #expect(try Data(contentsOf: first.privateKeyURL) == before)

            // Only the public key left behind: still refused, nothing written.
            let other = directory.appendingPathComponent("other")
            try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
            try Data("x".utf8).write(to: other.appendingPathComponent("directive.pub"))
            let second = #expect(throws: RemoteError.self) { try DirectiveKeyFiles.generate(in: other) }
            #expect(second?.code == .keyFileExists)
            #expect(!FileManager.default.fileExists(atPath: other.appendingPathComponent("directive.key").path))
        }
    }

    @Test func keygenIntoAnUnwritablePlaceFails() throws {
        let error = #expect(throws: RemoteError.self) {
            try DirectiveKeyFiles.generate(in: URL(fileURLWithPath: "/proc/switchback-keys"))
        }
        #expect(error?.code == .directoryUnwritable)
    }

    @Test func signAndVerifyRoundTripThroughKeyFiles() async throws {
        try await withTemporaryDirectory { directory in
            let keys = try DirectiveKeyFiles.generate(in: directory)
            let signer = try DirectiveSigner(keyFiles: [keys.privateKeyURL])
            #expect(signer.keyIDs == [keys.keyID])
            let directive = TestFixtures.directive(rolloutPercent: 50)
            let envelope = try signer.sign(directive)
            let trust = try TrustConfig(appID: TestFixtures.appID, trustedKeyPEMs: [String(contentsOf: keys.publicKeyURL, encoding: .utf8)])
            let bucket = RolloutBucket.bucket(installID: TestFixtures.installID, appID: TestFixtures.appID)
            let outcome = DirectiveEvaluator.evaluate(envelope, trust: trust, context: TestFixtures.context())
            #expect(outcome == (bucket < 50 ? .applied(directive) : .notApplicable(.outsideRollout, reason: outcome.description)))

            let parsed = try JSONDecoder().decode(DirectiveEnvelope.self, from: envelope)
            #expect(parsed.signatures.map(\.keyid) == [keys.keyID])
            let payload = try #require(Data(base64Encoded: parsed.payload))
            #expect(try JSONDecoder().decode(Directive.self, from: payload) == directive)
        }
    }

    @Test func signerRejectsAnInvalidDirective() throws {
        let signer = DirectiveSigner(privateKey: TestFixtures.operatorKey)
        let cases: [(Directive, String)] = [
            (TestFixtures.directive(appliesTo: []), "applies_to"),
            (TestFixtures.directive(rolloutPercent: 101), "rollout_percent"),
            (TestFixtures.directive(serial: 0), "serial"),
            (TestFixtures.directive(expiresAt: TestFixtures.now.addingTimeInterval(-7200)), "expires_at"),
            (TestFixtures.directive(reason: "  "), "reason"),
            (TestFixtures.directive(appID: ""), "app_id"),
        ]
        for (directive, field) in cases {
            let error = #expect(throws: RemoteError.self) { try signer.sign(directive) }
            #expect(error?.code == .invalidDirective)
            #expect(error?.description.contains(field) == true, "\(String(describing: error))")
        }
    }

    @Test func unreadableOrBrokenKeyFilesFail() async throws {
        try await withTemporaryDirectory { directory in
            let missing = #expect(throws: RemoteError.self) { try DirectiveSigner(keyFiles: [directory.appendingPathComponent("nope.key")]) }
            #expect(missing?.code == .fileUnreadable)
            let broken = directory.appendingPathComponent("broken.key")
            try Data("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8).write(to: broken)
            let invalid = #expect(throws: RemoteError.self) { try DirectiveSigner(keyFiles: [broken]) }
            #expect(invalid?.code == .invalidPrivateKey)
            #expect(invalid?.path == broken.path)
        }
    }

    @Test func trustRejectsABrokenPublicKey() throws {
        let good = try TestFixtures.operatorKey.publicKey.pemRepresentation()
        let error = #expect(throws: RemoteError.self) {
            try TrustConfig(appID: TestFixtures.appID, trustedKeyPEMs: [good, "not a key"])
        }
        #expect(error?.code == .invalidPublicKey)
        #expect(error?.path == "key 2 of 2")
    }

    @Test func directiveWireFormat() throws {
        let directive = TestFixtures.directive(rolloutPercent: 10)
        let json = String(decoding: try directive.jsonData(), as: UTF8.self)
        #expect(json == #"{"app_id":"com.example.notes","applies_to":["2.3.0"],"decision":"run_previous","expires_at":"2026-05-08T12:00:00Z","issued_at":"2026-05-01T11:00:00Z","reason":"2.3.0 corrupts notes on save","rollout_percent":10,"serial":1}"#)
        let withoutRollout = String(decoding: try TestFixtures.directive().jsonData(), as: UTF8.self)
        #expect(!withoutRollout.contains("rollout_percent"))
    }

    @Test func fractionalSecondsAreDropped() throws {
        let directive = TestFixtures.directive(issuedAt: TestFixtures.now.addingTimeInterval(-0.75))
        #expect(directive.issuedAt == TestFixtures.now.addingTimeInterval(-1))
        #expect(try JSONDecoder().decode(Directive.self, from: directive.jsonData()) == directive)
    }

    @Test func documentedExampleVerifies() throws {
        // docs/remote.md shows this exact envelope; regenerate both with
        // SWITCHBACK_WRITE_EXAMPLE=1 swift test --filter documentedExampleVerifies
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        let exampleKey = try Ed25519PrivateKey(rawRepresentation: Array(SHA256.hash(Array("switchback example key".utf8))))
        let directive = Directive(
            appID: "com.example.notes", serial: 42,
            issuedAt: Directive.parseTime("2026-05-01T12:00:00Z")!, expiresAt: Directive.parseTime("2026-05-08T12:00:00Z")!,
            decision: .runPrevious, appliesTo: ["2.3.0"], rolloutPercent: 25,
            reason: "2.3.0 corrupts notes on save; rolling back while we fix it")
        let envelope = try DirectiveSigner(privateKey: exampleKey).sign(directive)
        let envelopeFile = fixtures.appendingPathComponent("example-directive.json")
        let publicKeyFile = fixtures.appendingPathComponent("example-directive.pub")
        if ProcessInfo.processInfo.environment["SWITCHBACK_WRITE_EXAMPLE"] == "1" {
            try envelope.write(to: envelopeFile)
            try Data(exampleKey.publicKey.pemRepresentation().utf8).write(to: publicKeyFile)
        }
        #expect(try Data(contentsOf: envelopeFile) == envelope)  // Ed25519 is deterministic
        let trust = try TrustConfig(appID: "com.example.notes", trustedKeyPEMs: [String(contentsOf: publicKeyFile, encoding: .utf8)])
        let context = InstallContext(currentVersion: "2.3.0", installID: "x", now: Directive.parseTime("2026-05-02T00:00:00Z")!)
        let outcome = DirectiveEvaluator.evaluate(try Data(contentsOf: envelopeFile), trust: trust, context: context)
        #expect(outcome.refusalCode == nil)
    }
}
