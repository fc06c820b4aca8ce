#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwitchbackCrypto

/// Signs directives with one or more Ed25519 private keys (`rollbackctl sign`).
///
/// Signing with two keys at once (old and new) is how a key is rotated without a gap:
/// installs that trust either key accept the envelope. See `docs/remote.md`.
public struct DirectiveSigner: Sendable {
    /// The keys that sign, in order; each adds one signature.
    public let privateKeys: [Ed25519PrivateKey]

    /// A signer with one key.
    public init(privateKey: Ed25519PrivateKey) {
        self.privateKeys = [privateKey]
    }

    /// A signer with several keys (for rotation). Traps if `privateKeys` is empty: a
    /// signer with no key is a programming mistake.
    public init(privateKeys: [Ed25519PrivateKey]) {
        precondition(!privateKeys.isEmpty, "DirectiveSigner needs at least one private key")
        self.privateKeys = privateKeys
    }

    /// A signer reading PEM private keys from files (the `directive.key` written by keygen).
    ///
    /// Throws ``RemoteError`` with code ``RemoteError/Code/fileUnreadable`` or
    /// ``RemoteError/Code/invalidPrivateKey``. Traps if `keyFiles` is empty.
    public init(keyFiles: [URL]) throws {
        precondition(!keyFiles.isEmpty, "DirectiveSigner needs at least one key file")
        try self.init(keyPEMs: keyFiles.map { file in
            do {
                return (file.path, try String(contentsOf: file, encoding: .utf8))
            } catch {
                throw RemoteError(.fileUnreadable, errno: error.underlyingErrno, path: file.path)
            }
        })
    }

    /// A signer from PEM private keys already read (`rollbackctl sign` reads its key files
    /// through its own ownership and mode checks), each with the path that names it in errors.
    ///
    /// Throws ``RemoteError`` with code ``RemoteError/Code/invalidPrivateKey``. Traps if
    /// `keyPEMs` is empty.
    public init(keyPEMs: [(path: String, pem: String)]) throws {
        precondition(!keyPEMs.isEmpty, "DirectiveSigner needs at least one key")
        self.privateKeys = try keyPEMs.map { key in
            do {
                return try Ed25519PrivateKey(pemRepresentation: key.pem)
            } catch let error as CryptoError {
                throw RemoteError(.invalidPrivateKey, path: key.path, detail: error.openSSLReason)
            }
        }
    }

    /// The key ids of the signing keys, in order.
    public var keyIDs: [String] { privateKeys.map(\.publicKey.keyID) }

    /// Validates `directive`, then returns the envelope file to publish (pretty JSON).
    ///
    /// Throws ``RemoteError`` with code ``RemoteError/Code/invalidDirective`` if a field breaks
    /// a rule of the format, or ``RemoteError/Code/cryptoFailed`` if libcrypto fails.
    public func sign(_ directive: Directive) throws -> Data {
        try envelope(for: directive).jsonData()
    }

    /// Validates `directive` and returns the signed envelope as a value.
    ///
    /// Throws like ``sign(_:)``.
    public func envelope(for directive: Directive) throws -> DirectiveEnvelope {
        let payload = try directive.jsonData()
        let message = DirectiveEnvelope.signedMessage(payload: payload)
        let signatures = try privateKeys.map { key in
            do {
                let signature = try key.signature(for: message)
                return EnvelopeSignature(keyid: key.publicKey.keyID, sig: Data(signature).base64EncodedString())
            } catch let error as CryptoError {
                throw RemoteError(.cryptoFailed, detail: error.description)
            }
        }
        return DirectiveEnvelope(payload: payload.base64EncodedString(), signatures: signatures)
    }
}
