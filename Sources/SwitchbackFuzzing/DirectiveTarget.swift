#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwitchbackCrypto
import SwitchbackRemote

/// The remote directive: the input as a fetched envelope (untrusted bytes, judged by
/// `DirectiveEvaluator`), and the input as a payload signed by a trusted key, so the
/// directive's decoding and every later check see fuzzed bytes too.
enum DirectiveTarget {
    /// A fixed key: the fuzz target signs payloads with it and trusts it.
    static let key: Ed25519PrivateKey? = try? Ed25519PrivateKey(rawRepresentation: Array(repeating: 7, count: 32))
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        guard let key else { throw FuzzFailure("libcrypto could not make the fixed Ed25519 key") }
        let trust = TrustConfig(appID: "dev.switchback.sample", trustedKeys: [key.publicKey])
        let context = InstallContext(currentVersion: "1.2.0", installID: "0123456789abcdef0123456789abcdef",
                                     lastAcceptedSerial: 5, now: now)
        // 1. As the served envelope.
        let asEnvelope = DirectiveEvaluator.evaluate(Data(bytes), trust: trust, context: context)
        // 2. As the signed payload.
        let payload = Data(bytes)
        guard let signature = try? key.signature(for: DirectiveEnvelope.signedMessage(payload: payload)) else {
            throw FuzzFailure("signing failed")
        }
        let envelope = DirectiveEnvelope(payload: payload.base64EncodedString(),
                                         signatures: [EnvelopeSignature(keyid: key.publicKey.keyID, sig: Data(signature).base64EncodedString())])
        let asPayload = DirectiveEvaluator.evaluate(envelope.jsonData(), trust: trust, context: context)
        try check(!asPayload.reasonText.isEmpty && !asEnvelope.reasonText.isEmpty, "an outcome without a reason")
        // The outcome as `rollbackctl sync` persists it and `status --json` shows it.
        for outcome in [asEnvelope, asPayload] {
            guard let json = try? JSONEncoder().encode(outcome) else { throw FuzzFailure("an outcome does not encode: \(outcome)") }
            guard let decoded = try? JSONDecoder().decode(SyncOutcome.self, from: json) else {
                throw FuzzFailure("an encoded outcome does not decode: \(String(decoding: json, as: UTF8.self))")
            }
            try check(decoded == outcome, "an outcome changed in a round trip: \(outcome)")
        }
        // 3. A directive that decodes survives its own encoding unchanged.
        if let directive = try? JSONDecoder().decode(Directive.self, from: payload) {
            let encoded: Data
            do { encoded = try directive.jsonData() } catch { throw FuzzFailure("a decoded directive does not encode: \(error)") }
            let again: Directive
            do { again = try JSONDecoder().decode(Directive.self, from: encoded) } catch {
                throw FuzzFailure("an encoded directive does not decode: \(error)")
            }
            try check(again == directive, "a directive changed in a round trip")
            _ = Int64(directive.issuedAt.timeIntervalSince1970) &+ Int64(directive.expiresAt.timeIntervalSince1970)
            return .parsed("\(asEnvelope.kind) / \(asPayload.kind): \(asPayload.reasonText)")
        }
        return .rejected("\(asEnvelope.kind) / \(asPayload.kind): \(asPayload.reasonText)")
    }
}

extension SyncOutcome {
    /// The outcome's sentence, or its kind when it has none.
    var reasonText: String {
        let text = "\(self)"
        return text.isEmpty ? kind : text
    }
}
