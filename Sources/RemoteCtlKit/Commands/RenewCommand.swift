#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RollbackCtlKit
import SwitchbackRemote

/// `sign --renew FILE --key KEY [--expires-in TIME | --expires-at TIME] [--serial N] [--out FILE]`:
/// re-signs the directive in FILE unchanged but for a new serial, `issued_at` and `expires_at`,
/// so installs can tell a live publisher from a frozen or replayed file (TUF's timestamp role,
/// in one file). Meant for cron: it rewrites FILE in place, atomically, unless `--out` says
/// otherwise.
///
/// Guarantees: it renews only a directive that one of the given keys signed (so a file altered
/// on the server is never blessed); the new serial is above the old one (the time in seconds,
/// or the old serial + 1 if that is higher); every other field is kept byte for byte.
struct RenewCommand {
    let file: String
    let keyFiles: [String]
    let output: String
    let serial: UInt64?
    let issuedAt: Date
    let expiry: (at: Date?, seconds: TimeInterval)

    init(_ parsed: ParsedArguments, file: String, now: Date = Date()) throws(CommandError) {
        func usage(_ message: String) -> CommandError { .usage(message, subcommand: "sign") }
        self.file = file
        keyFiles = parsed.lists["--key"] ?? []
        if keyFiles.isEmpty { throw usage("Missing '--key FILE' (the key that signed \(file)).") }
        for kept in ["--decision", "--reason", "--rollout-percent", "--app-id"] where parsed.options[kept] != nil {
            throw usage("'--renew' keeps the directive's fields; drop '\(kept)' (or sign a new directive without '--renew').")
        }
        if parsed.lists["--applies-to"] != nil {
            throw usage("'--renew' keeps the directive's fields; drop '--applies-to' (or sign a new directive without '--renew').")
        }
        if let text = parsed.options["--serial"] {
            guard let value = UInt64(text), value > 0 else { throw usage("'--serial' must be a whole number of at least 1, not '\(text)'.") }
            serial = value
        } else {
            serial = nil
        }
        var issuedAt = now
        if let text = parsed.options["--issued-at"] {
            guard let date = Directive.parseTime(text) else { throw usage("'--issued-at' must be an RFC 3339 time such as 2026-05-01T12:00:00Z, not '\(text)'.") }
            issuedAt = date
        }
        self.issuedAt = issuedAt
        switch (parsed.options["--expires-at"], parsed.options["--expires-in"]) {
        case (.some, .some): throw usage("Give '--expires-at' or '--expires-in', not both.")
        case (let text?, nil):
            guard let date = Directive.parseTime(text) else { throw usage("'--expires-at' must be an RFC 3339 time such as 2026-05-08T12:00:00Z, not '\(text)'.") }
            expiry = (date, 0)
        case (nil, let text):
            guard let seconds = SignCommand.duration(text ?? "1d") else { throw usage("'--expires-in' must be a duration such as 90s, 30m, 12h or 1d, not '\(text ?? "")'.") }
            expiry = (nil, seconds)
        }
        output = parsed.options["--out"] ?? file
    }

    func run(_ console: Console) throws(CommandError) {
        let signer = try TrustedInputs.signer(keyFiles: keyFiles)
        let old = try Self.directive(in: file, signedByOneOf: signer)
        let newSerial = serial ?? max(old.serial + 1, UInt64(max(0, issuedAt.timeIntervalSince1970)))
        guard newSerial > old.serial else {
            throw .failure("The new serial \(newSerial) is not above \(file)'s serial \(old.serial), so installs would refuse it as a replay; give a higher '--serial' or none.")
        }
        let renewed = Directive(appID: old.appID, serial: newSerial, issuedAt: issuedAt,
                                expiresAt: expiry.at ?? issuedAt.addingTimeInterval(expiry.seconds), decision: old.decision,
                                appliesTo: old.appliesTo, rolloutPercent: old.rolloutPercent, reason: old.reason)
        let data: Data
        do { data = try signer.sign(renewed) } catch { throw .failure(String(describing: error)) }
        if output == "-" {
            console.out(String(decoding: data, as: UTF8.self))
            return
        }
        try OutputFile.write(Array(data), to: output)
        console.out("Renewed directive serial \(old.serial) as serial \(newSerial) (\(renewed.decision.summary) on \(renewed.appliesTo.joined(separator: ", "))), expires \(Directive.formatTime(renewed.expiresAt)); wrote \(output).")
    }

    /// The directive in the envelope at `path`, if one of `signer`'s keys signed it.
    static func directive(in path: String, signedByOneOf signer: DirectiveSigner) throws(CommandError) -> Directive {
        guard let data = try TrustedInputs.directive(at: path) else {
            throw .failure("Could not read \(path): \(CocoaError(.fileReadNoSuchFile).fileErrorDescription); give the directive file to renew.")
        }
        guard let envelope = try? JSONDecoder().decode(DirectiveEnvelope.self, from: data),
              let payload = Data(base64Encoded: envelope.payload) else {
            throw .failure("\(path) is not a directive envelope; renew a file written by 'rollbackctl sign'.")
        }
        let message = DirectiveEnvelope.signedMessage(payload: payload)
        let keys = signer.privateKeys.map(\.publicKey)
        let verified = envelope.signatures.contains { signature in
            guard let key = keys.first(where: { $0.keyID == signature.keyid }), let sig = Data(base64Encoded: signature.sig) else { return false }
            return key.isValidSignature(sig, for: message)
        }
        guard verified else {
            throw .failure("\(path) is not signed by key \(signer.keyIDs.joined(separator: ", ")) (or was altered since); renew only a directive you signed with these keys.")
        }
        do { return try JSONDecoder().decode(Directive.self, from: payload) } catch {
            throw .failure("\(path)'s signed payload is not a valid directive; sign a new one with 'rollbackctl sign'.")
        }
    }
}
