/// One signature in a ``DirectiveEnvelope``.
public struct EnvelopeSignature: Sendable, Equatable, Hashable, Codable {
    /// The signer's key id: the first 16 hex characters of SHA-256 of its raw public key.
    public var keyid: String
    /// The standard base64 of the 64-byte Ed25519 signature.
    public var sig: String

    /// Creates a signature entry.
    public init(keyid: String, sig: String) {
        self.keyid = keyid
        self.sig = sig
    }
}
