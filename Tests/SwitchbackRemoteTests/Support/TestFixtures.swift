import Foundation
import SwitchbackCrypto
@testable import SwitchbackRemote

/// Keys, directives and directories shared by the tests.
enum TestFixtures {
    static let appID = "com.example.notes"
    static let installID = "4f1c2a9e-5b7d-4e21-9c3a-0d8e6f7a1b2c"
    static let badVersion = "2.3.0"
    static let fixedVersion = "2.3.1"

    /// A fixed "now" for pure tests: 2026-05-01T12:00:00Z.
    static let now = Date(timeIntervalSince1970: 1_777_636_800)

    /// The operator's signing key (fixed seed, so runs are reproducible).
    static let operatorKey = try! Ed25519PrivateKey(rawRepresentation: Array(repeating: 0x11, count: 32))
    /// A second key, trusted alongside the first (rotation).
    static let rotatedKey = try! Ed25519PrivateKey(rawRepresentation: Array(repeating: 0x22, count: 32))
    /// A key nobody trusts.
    static let strangerKey = try! Ed25519PrivateKey(rawRepresentation: Array(repeating: 0x33, count: 32))

    static var trust: TrustConfig {
        TrustConfig(appID: appID, trustedKeys: [operatorKey.publicKey, rotatedKey.publicKey])
    }

    static func context(version: String = badVersion, lastAcceptedSerial: UInt64? = nil, now: Date = now, installID: String = installID) -> InstallContext {
        InstallContext(currentVersion: version, installID: installID, lastAcceptedSerial: lastAcceptedSerial, now: now)
    }

    static func directive(
        appID: String = appID,
        serial: UInt64 = 1,
        issuedAt: Date = now.addingTimeInterval(-3600),
        expiresAt: Date = now.addingTimeInterval(7 * 86400),
        decision: DirectiveDecision = .runPrevious,
        appliesTo: [String] = [badVersion],
        rolloutPercent: Int? = nil,
        reason: String = "2.3.0 corrupts notes on save"
    ) -> Directive {
        Directive(appID: appID, serial: serial, issuedAt: issuedAt, expiresAt: expiresAt, decision: decision,
                  appliesTo: appliesTo, rolloutPercent: rolloutPercent, reason: reason)
    }

    static func signed(_ directive: Directive, by key: Ed25519PrivateKey = operatorKey) throws -> Data {
        try DirectiveSigner(privateKey: key).sign(directive)
    }

    /// An envelope around arbitrary payload bytes, signed as-is (no validation), to reach
    /// the checks that follow signature verification.
    static func signedRawPayload(_ payload: Data, by key: Ed25519PrivateKey = operatorKey) throws -> Data {
        let signature = try key.signature(for: DirectiveEnvelope.signedMessage(payload: payload))
        let envelope = DirectiveEnvelope(payload: payload.base64EncodedString(),
                                         signatures: [EnvelopeSignature(keyid: key.publicKey.keyID, sig: Data(signature).base64EncodedString())])
        return envelope.jsonData()
    }

    /// A fresh temporary directory, removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("switchback-remote-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Runs `body` with a fresh temporary directory that is removed afterwards.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = try TestFixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}
