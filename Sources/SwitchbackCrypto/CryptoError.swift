#if canImport(Glibc)
import Glibc
#endif

/// The one error type of `SwitchbackCrypto`.
///
/// Every failure of a key, a signature or a digest operation is a `CryptoError` with a
/// ``Code`` to branch on and a ``description`` that is one whole sentence a user can act on.
/// A signature that does not verify is *not* an error: ``Ed25519PublicKey/isValidSignature(_:for:)``
/// returns `false`.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// The PEM text is not an Ed25519 private key in PKCS#8 form (or is encrypted).
        case invalidPrivateKey
        /// The PEM text or raw bytes are not an Ed25519 public key.
        case invalidPublicKey
        /// libcrypto refused to generate a key.
        case keyGenerationFailed
        /// libcrypto refused to produce a signature.
        case signingFailed
        /// libcrypto could not encode a key as PEM.
        case encodingFailed
        /// A file to hash could not be opened or read.
        case fileUnreadable
    }

    /// What went wrong, for code to branch on.
    public var code: Code
    /// The `errno` captured right after a failing system call, if one was involved.
    public var errno: Int32?
    /// The file involved, if any.
    public var path: String?
    /// libcrypto's own explanation from its error queue, if it gave one.
    public var openSSLReason: String?

    /// Creates an error; the library builds these, tests and callers only read them.
    public init(_ code: Code, errno: Int32? = nil, path: String? = nil, openSSLReason: String? = nil) {
        self.code = code
        self.errno = errno
        self.path = path
        self.openSSLReason = openSSLReason
    }

    /// One sentence saying what failed and what to do about it.
    public var description: String {
        let detail = openSSLReason.map { " (\($0))" } ?? ""
        switch code {
        case .invalidPrivateKey:
            return "The private key\(path.map { " at \($0)" } ?? "") is not an unencrypted Ed25519 PKCS#8 PEM key\(detail); generate one with 'rollbackctl keygen'."
        case .invalidPublicKey:
            return "The public key\(path.map { " at \($0)" } ?? "") is not an Ed25519 public key in PEM form\(detail); use the directive.pub written by 'rollbackctl keygen'."
        case .keyGenerationFailed:
            return "libcrypto could not generate an Ed25519 key\(detail); check that the system's OpenSSL 3 is installed and working."
        case .signingFailed:
            return "libcrypto could not sign with the Ed25519 key\(detail); check that the key file is intact."
        case .encodingFailed:
            return "libcrypto could not write the key as PEM\(detail); check that the system's OpenSSL 3 is installed and working."
        case .fileUnreadable:
            let reason = errno.map { String(cString: strerror($0)) } ?? "read failed"
            return "Could not read \(path ?? "the file") to hash it (\(reason)); check that it exists and is readable."
        }
    }
}
