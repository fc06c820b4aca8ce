import CSwitchbackCrypto

/// An Ed25519 private key (RFC 8032), held as its 32-byte seed; every operation goes
/// through libcrypto (`EVP_PKEY_ED25519`).
///
/// The value never prints its secret: `description` shows only the ``keyID``.
public struct Ed25519PrivateKey: Sendable, CustomStringConvertible {
    /// The 32-byte private seed. Treat it as a secret.
    public let rawRepresentation: [UInt8]
    /// The matching public key.
    public let publicKey: Ed25519PublicKey

    /// Generates a fresh key from libcrypto's CSPRNG. Wraps `EVP_PKEY_keygen`.
    ///
    /// Throws ``CryptoError`` with code ``CryptoError/Code/keyGenerationFailed``.
    public static func generate() throws -> Ed25519PrivateKey {
        ERR_clear_error()
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else {
            throw CryptoError(.keyGenerationFailed, openSSLReason: OpenSSL.drainErrors())
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw CryptoError(.keyGenerationFailed, openSSLReason: OpenSSL.drainErrors())
        }
        defer { EVP_PKEY_free(key) }
        guard let raw = OpenSSL.rawPrivateKey(of: key) else {
            throw CryptoError(.keyGenerationFailed, openSSLReason: OpenSSL.drainErrors())
        }
        return try Ed25519PrivateKey(rawRepresentation: raw)
    }

    /// Creates a key from its 32-byte seed.
    ///
    /// Throws ``CryptoError`` with code ``CryptoError/Code/invalidPrivateKey`` if the
    /// seed is not 32 bytes.
    public init(rawRepresentation: [UInt8]) throws {
        ERR_clear_error()
        guard rawRepresentation.count == 32, let key = OpenSSL.privateKey(raw: rawRepresentation) else {
            throw CryptoError(.invalidPrivateKey, openSSLReason: OpenSSL.drainErrors())
        }
        defer { EVP_PKEY_free(key) }
        guard let publicRaw = OpenSSL.rawPublicKey(of: key) else {
            throw CryptoError(.invalidPrivateKey, openSSLReason: OpenSSL.drainErrors())
        }
        self.rawRepresentation = rawRepresentation
        self.publicKey = try Ed25519PublicKey(rawRepresentation: publicRaw)
    }

    /// Reads an unencrypted PKCS#8 PEM key (`-----BEGIN PRIVATE KEY-----`). Wraps
    /// `PEM_read_bio_PrivateKey`; an encrypted key fails instead of prompting for a pass phrase.
    ///
    /// Throws ``CryptoError`` with code ``CryptoError/Code/invalidPrivateKey`` if the text
    /// is not such a key or the key is not Ed25519.
    public init(pemRepresentation: String) throws {
        ERR_clear_error()
        let raw: [UInt8]? = OpenSSL.withReadBIO(pemRepresentation) { bio in
            // A pass-phrase callback that declines: an encrypted key fails instead of prompting.
            let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            guard let key else { return nil }
            defer { EVP_PKEY_free(key) }
            guard EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 else { return nil }
            return OpenSSL.rawPrivateKey(of: key)
        }
        guard let raw else {
            throw CryptoError(.invalidPrivateKey, openSSLReason: OpenSSL.drainErrors())
        }
        try self.init(rawRepresentation: raw)
    }

    /// The key as unencrypted PKCS#8 PEM text. Wraps `PEM_write_bio_PrivateKey`.
    ///
    /// Throws ``CryptoError`` with code ``CryptoError/Code/encodingFailed``.
    public func pemRepresentation() throws -> String {
        ERR_clear_error()
        guard let key = OpenSSL.privateKey(raw: rawRepresentation) else {
            throw CryptoError(.encodingFailed, openSSLReason: OpenSSL.drainErrors())
        }
        defer { EVP_PKEY_free(key) }
        guard let pem = OpenSSL.writeToString({ PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }) else {
            throw CryptoError(.encodingFailed, openSSLReason: OpenSSL.drainErrors())
        }
        return pem
    }

    /// Signs `message` (pure Ed25519, no pre-hash): a 64-byte signature.
    /// Wraps `EVP_DigestSignInit` with a NULL digest and `EVP_DigestSign`.
    ///
    /// Throws ``CryptoError`` with code ``CryptoError/Code/signingFailed``.
    public func signature(for message: some Sequence<UInt8>) throws -> [UInt8] {
        ERR_clear_error()
        let message = Array(message)
        guard let key = OpenSSL.privateKey(raw: rawRepresentation), let context = EVP_MD_CTX_new() else {
            throw CryptoError(.signingFailed, openSSLReason: OpenSSL.drainErrors())
        }
        defer {
            EVP_MD_CTX_free(context)
            EVP_PKEY_free(key)
        }
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else {
            throw CryptoError(.signingFailed, openSSLReason: OpenSSL.drainErrors())
        }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = signature.count
        let status = message.withUnsafeBufferPointer { tbs in
            EVP_DigestSign(context, &signature, &length, tbs.baseAddress, tbs.count)
        }
        guard status == 1, length == 64 else {
            throw CryptoError(.signingFailed, openSSLReason: OpenSSL.drainErrors())
        }
        return signature
    }

    /// Shows the key id only, never the secret.
    public var description: String {
        "Ed25519PrivateKey(keyID: \(publicKey.keyID))"
    }
}
