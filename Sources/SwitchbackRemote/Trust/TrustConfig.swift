import SwitchbackCrypto

/// What an install trusts: its own app id and the public keys whose signatures it accepts.
///
/// Several keys may be trusted at once so that keys can be rotated: ship the new public key
/// next to the old one, sign with both (or with the new one), then drop the old one.
public struct TrustConfig: Sendable, Equatable {
    /// The app id from the manifest; a directive for another app is refused.
    public var appID: String
    /// The public keys whose signatures are accepted.
    public var trustedKeys: [Ed25519PublicKey]

    /// Creates a trust configuration from parsed keys.
    public init(appID: String, trustedKeys: [Ed25519PublicKey]) {
        self.appID = appID
        self.trustedKeys = trustedKeys
    }

    /// Creates a trust configuration from PEM public keys (the contents of `directive.pub` files,
    /// as `scripts/bundle` copies them into the manifest).
    ///
    /// Throws ``RemoteError`` with code ``RemoteError/Code/invalidPublicKey`` for the first key
    /// that does not parse, naming its position (`key 2 of 3`) in `path`.
    public init(appID: String, trustedKeyPEMs: [String]) throws {
        var keys: [Ed25519PublicKey] = []
        for (index, pem) in trustedKeyPEMs.enumerated() {
            do {
                keys.append(try Ed25519PublicKey(pemRepresentation: pem))
            } catch let error as CryptoError {
                throw RemoteError(.invalidPublicKey, path: "key \(index + 1) of \(trustedKeyPEMs.count)", detail: error.openSSLReason)
            }
        }
        self.init(appID: appID, trustedKeys: keys)
    }

    /// The trusted key with this key id, if any.
    public func trustedKey(withID keyID: String) -> Ed25519PublicKey? {
        trustedKeys.first { $0.keyID == keyID }
    }
}
