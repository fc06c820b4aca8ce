#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwitchbackCrypto
import SwitchbackFiles

/// Judges a fetched envelope for this install: a pure function of (bytes, trust, context).
///
/// The checks run in this order, and the first that fails decides the outcome:
/// 1. the envelope parses (JSON, base64 payload, 1...16 signatures) → else `refused(.malformedEnvelope)`;
/// 2. a signature by a trusted key id verifies over `"switchback-directive-v1\n"` + payload →
///    else `refused(.badSignature)` (a trusted key id whose signature fails) or `refused(.untrustedKey)`;
/// 3. the payload is a valid directive → else `refused(.malformedDirective)`;
/// 4. its app id is ours → else `refused(.wrongApp)`;
/// 5. its serial is not below the last accepted one, nor below the highest this install has
///    seen (``InstallContext/replayFloor``) → else `refused(.replayedSerial)`;
/// 6. it has not expired (`now < expires_at`) → else `refused(.expired)`;
/// 7. it was not issued more than ``maxClockSkew`` in the future → else `refused(.notYetValid)`;
/// 8. it names our current version → else `notApplicable(.versionMismatch)`;
/// 9. our rollout bucket is inside `rollout_percent` → else `notApplicable(.outsideRollout)`;
/// 10. its serial equals the last accepted one → `unchanged(serial:)`; otherwise → `applied`.
/// Nothing is decoded from the payload before a signature verifies.
public enum DirectiveEvaluator {
    /// How far in the future `issued_at` may be (clock skew between signer and install): 5 minutes.
    public static let maxClockSkew: TimeInterval = 300

    /// Evaluates `envelope` (the fetched bytes). Never throws; every failure is an outcome.
    public static func evaluate(_ envelope: Data, trust: TrustConfig, context: InstallContext) -> SyncOutcome {
        judge(envelope, trust: trust, context: context).outcome
    }

    /// Evaluates `envelope`, and returns with the outcome the directive itself once it is
    /// authentic (steps 1-4 passed: signed by a trusted key, well formed, for this app), even
    /// when it is then refused or not applicable: the caller remembers its serial and expiry.
    public static func judge(_ envelope: Data, trust: TrustConfig, context: InstallContext) -> (outcome: SyncOutcome, authentic: Directive?) {
        switch evaluateToAuthentic(envelope, trust: trust) {
        case .failure(let outcome): return (outcome, nil)
        case .success(let directive): return (evaluate(directive, trust: trust, context: context), directive)
        }
    }

    private enum Authentic { case success(Directive), failure(SyncOutcome) }

    /// Steps 1-4.
    private static func evaluateToAuthentic(_ envelope: Data, trust: TrustConfig) -> Authentic {
        // 1. Envelope.
        let parsed: DirectiveEnvelope
        do {
            parsed = try JSONDecoder().decode(DirectiveEnvelope.self, from: envelope)
        } catch {
            return .failure(.refused(.malformedEnvelope, reason: "The served file is not a directive envelope (\(describe(error))); publish the file written by 'rollbackctl sign'."))
        }
        guard let payload = Data(base64Encoded: parsed.payload), !payload.isEmpty else {
            return .failure(.refused(.malformedEnvelope, reason: "The directive envelope's payload is not valid base64; publish the file written by 'rollbackctl sign'."))
        }
        guard !parsed.signatures.isEmpty else {
            return .failure(.refused(.malformedEnvelope, reason: "The directive envelope carries no signature; sign it with 'rollbackctl sign'."))
        }
        guard parsed.signatures.count <= DirectiveEnvelope.maxSignatures else {
            return .failure(.refused(.malformedEnvelope, reason: "The directive envelope carries \(parsed.signatures.count) signatures, more than the \(DirectiveEnvelope.maxSignatures) allowed; sign it with at most a few keys."))
        }

        // 2. Signature.
        let message = DirectiveEnvelope.signedMessage(payload: payload)
        var failedTrustedIDs: [String] = []
        var verified = false
        for signature in parsed.signatures {
            guard let key = trust.trustedKey(withID: signature.keyid) else { continue }
            if let sig = Data(base64Encoded: signature.sig), key.isValidSignature(sig, for: message) {
                verified = true
                break
            }
            failedTrustedIDs.append(signature.keyid)
        }
        if !verified {
            if let keyID = failedTrustedIDs.first {
                return .failure(.refused(.badSignature, reason: "The directive's signature by trusted key \(keyID) does not verify, so the file was altered or corrupted; publish a freshly signed directive."))
            }
            let offered = parsed.signatures.map { printableKeyID($0.keyid) }.prefix(4).joined(separator: ", ")
            let trusted = trust.trustedKeys.map(\.keyID).joined(separator: ", ")
            return .failure(.refused(.untrustedKey, reason: "The directive is signed only by key \(offered), which this install does not trust (trusted: \(trusted.isEmpty ? "none" : trusted)); sign with a trusted key or add its public key to the manifest."))
        }

        // 3. Directive.
        let directive: Directive
        do {
            directive = try JSONDecoder().decode(Directive.self, from: payload)
        } catch {
            return .failure(.refused(.malformedDirective, reason: "The signed payload is not a valid directive (\(describe(error))); sign a corrected one with 'rollbackctl sign'."))
        }

        // 4. App.
        guard directive.appID == trust.appID else {
            return .failure(.refused(.wrongApp, reason: "Directive serial \(directive.serial) is for app '\(directive.appID)', not '\(trust.appID)'; publish this app's directive at this URL."))
        }

        return .success(directive)
    }

    /// Steps 5-10, for an authentic directive.
    private static func evaluate(_ directive: Directive, trust: TrustConfig, context: InstallContext) -> SyncOutcome {
        // 5. Replay.
        if let floor = context.replayFloor, directive.serial < floor {
            let which = floor == context.lastAcceptedSerial ? "the last accepted serial" : "serial"
            let seen = floor == context.lastAcceptedSerial ? "" : ", which this install has already verified"
            return .refused(.replayedSerial, reason: "Directive serial \(directive.serial) is older than \(which) \(floor)\(seen) (a replay or a stale copy); publish a directive with a serial above \(floor).")
        }

        // 6-7. Validity window.
        if context.now >= directive.expiresAt {
            return .refused(.expired, reason: "Directive serial \(directive.serial) expired at \(Directive.formatTime(directive.expiresAt)) and is not applied; the last accepted decision stays until a fresh directive is signed.")
        }
        if directive.issuedAt.timeIntervalSince(context.now) > maxClockSkew {
            return .refused(.notYetValid, reason: "Directive serial \(directive.serial) is issued at \(Directive.formatTime(directive.issuedAt)), in this machine's future; check the clocks of this machine and of the signer.")
        }

        // 8-9. Targeting.
        guard directive.applies(toVersion: context.currentVersion) else {
            let versions = directive.appliesTo.joined(separator: ", ")
            return .notApplicable(.versionMismatch, reason: "Directive serial \(directive.serial) (\(directive.decision.summary)) is for current version \(versions), not this install's \(context.currentVersion); the decision stays.")
        }
        if let percent = directive.rolloutPercent {
            let bucket = RolloutBucket.bucket(installID: context.installID, appID: trust.appID)
            if bucket >= percent {
                return .notApplicable(.outsideRollout, reason: "Directive serial \(directive.serial) (\(directive.decision.summary)) reaches \(percent)% of installs and this one (bucket \(bucket)) is outside it; the decision stays.")
            }
        }

        // 10. New or already applied.
        if let last = context.lastAcceptedSerial, directive.serial == last {
            return .unchanged(serial: directive.serial)
        }
        return .applied(directive)
    }

    /// A short, single-line reason from a decoding error.
    private static func describe(_ error: any Error) -> String {
        let text: String
        switch error {
        case DecodingError.dataCorrupted(let context):
            text = context.debugDescription.hasPrefix("The given data was not valid JSON") ? "not valid JSON" : context.debugDescription
        case DecodingError.keyNotFound(let key, _):
            text = "missing field \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            text = path.isEmpty ? context.debugDescription : "wrong type for \"\(path)\""
        default:
            text = "\(error)"
        }
        // Error texts may quote served bytes: keep them printable, short, and one clause.
        var line = String(String.UnicodeScalarView(text.unicodeScalars.map {
            $0.properties.generalCategory == .control ? " " : $0
        }))
        line = line.replacing(". ", with: "; ").trimming([".", " "])
        return line.count > 120 ? String(line.prefix(117)) + "..." : line
    }

    /// A key id from an unverified envelope, safe to show: 1 to 64 lower-case hex digits, or a placeholder.
    private static func printableKeyID(_ keyID: String) -> String {
        let isHex = !keyID.isEmpty && keyID.count <= 64 && keyID.allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
        return isHex ? keyID : "<malformed key id>"
    }
}
