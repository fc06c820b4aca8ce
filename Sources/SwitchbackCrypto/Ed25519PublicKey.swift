import CSwitchbackCrypto

/// An Ed25519 public key (RFC 8032), held as its raw 32 bytes; verification goes
/// through libcrypto (`EVP_PKEY_ED25519`).
public struct Ed25519PublicKey: Sendable, Hashable, CustomStringConvertible {
    /// The raw 32-byte public key.
    public let rawRepresentation: [UInt8]

    /// Creates a key from its raw 32 bytes.
    ///
    /// Throws ``CryptoError`` with code ``CryptoError/Code/invalidPublicKey`` if the
    /// bytes are not 32 long or libcrypto rejects them.
    public init(rawRepresentation: [UInt8]) throws {
        ERR_clear_error()
        guard rawRepresentation.count == 32, let key = OpenSSL.publicKey(raw: rawRepresentation) else {
            throw CryptoError(.invalidPublicKey, openSSLReason: OpenSSL.drainErrors())
        }
        EVP_PKEY_free(key)
        self.rawRepresentation = rawRepresentation
    }

    /// Reads a PEM SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`). Wraps `PEM_read_bio_PUBKEY`.
    ///
    /// Throws ``CryptoError`` with code ``CryptoError/Code/invalidPublicKey`` if the text is
    /// not a public key or the key is not Ed25519.
    public init(pemRepresentation: String) throws {
        ERR_clear_error()
        let raw: [UInt8]? = OpenSSL.withReadBIO(pemRepresentation) { bio in
            // A pass-phrase callback that declines: an encrypted key fails instead of prompting.
            let key = PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in 0 }, nil)
            guard let key else { return nil }
            defer { EVP_PKEY_free(key) }
            guard EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 else { return nil }
            return OpenSSL.rawPublicKey(of: key)
        }
        guard let raw else {
            throw CryptoError(.invalidPublicKey, openSSLReason: OpenSSL.drainErrors())
        }
        try self.init(rawRepresentation: raw)
    }

    /// The key as PEM SubjectPublicKeyInfo text. Wraps `PEM_write_bio_PUBKEY`.
    ///
    /// Throws ``CryptoError`` with code ``CryptoError/Code/encodingFailed``.
    public func pemRepresentation() throws -> String {
        ERR_clear_error()
        guard let key = OpenSSL.publicKey(raw: rawRepresentation) else {
            throw CryptoError(.encodingFailed, openSSLReason: OpenSSL.drainErrors())
        }
        defer { EVP_PKEY_free(key) }
        guard let pem = OpenSSL.writeToString({ PEM_write_bio_PUBKEY($0, key) }) else {
            throw CryptoError(.encodingFailed, openSSLReason: OpenSSL.drainErrors())
        }
        return pem
    }

    /// The key's short id: the first 16 hex characters of SHA-256 of the raw 32 bytes.
    public var keyID: String {
        String(SHA256.hash(rawRepresentation).hexString.prefix(16))
    }

    /// Whether `signature` is a valid Ed25519 signature of `message` by this key.
    /// Wraps `EVP_DigestVerifyInit` with a NULL digest and `EVP_DigestVerify`.
    ///
    /// Returns `false` (never throws) for a wrong, truncated or malformed signature.
    public func isValidSignature(_ signature: some Sequence<UInt8>, for message: some Sequence<UInt8>) -> Bool {
        let signature = Array(signature)
        let message = Array(message)
        guard signature.count == 64 else { return false }
        defer { ERR_clear_error() }
        guard let key = OpenSSL.publicKey(raw: rawRepresentation) else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return false }
        let status = signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { tbs in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, tbs.baseAddress, tbs.count)
            }
        }
        return status == 1
    }

    /// Shows the key id.
    public var description: String {
        "Ed25519PublicKey(keyID: \(keyID))"
    }
}
