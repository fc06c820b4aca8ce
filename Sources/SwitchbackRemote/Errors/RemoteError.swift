#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The one error type of `SwitchbackRemote`, thrown by key generation, signing and trust setup.
///
/// A sync never throws: its failures are ``SyncOutcome`` values. A `RemoteError` is for the
/// operator's own actions (`rollbackctl keygen`, `rollbackctl sign`, reading the manifest's keys),
/// with a ``Code`` to branch on and a ``description`` that is one sentence a user can act on.
public struct RemoteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// `keygen` would overwrite an existing key file.
        case keyFileExists
        /// A directory could not be created.
        case directoryUnwritable
        /// A file could not be written.
        case fileUnwritable
        /// A directory to write in may be changed by another user, or a link is on the way
        /// (SwitchbackFiles' checks; `detail` is the sentence).
        case untrustedDirectory
        /// A file could not be read.
        case fileUnreadable
        /// A private key file is not an Ed25519 PKCS#8 PEM key.
        case invalidPrivateKey
        /// A public key is not an Ed25519 PEM key.
        case invalidPublicKey
        /// A directive's fields break a rule of the format (see `docs/remote.md`).
        case invalidDirective
        /// libcrypto failed to generate a key or a signature.
        case cryptoFailed
    }

    /// What went wrong, for code to branch on.
    public var code: Code
    /// The `errno` captured right after a failing system call, if one was involved.
    public var errno: Int32?
    /// The file or directory involved, if any.
    public var path: String?
    /// Further detail: the broken rule, or libcrypto's reason.
    public var detail: String?

    /// Creates an error; the library builds these, callers only read them.
    public init(_ code: Code, errno: Int32? = nil, path: String? = nil, detail: String? = nil) {
        self.code = code
        self.errno = errno
        self.path = path
        self.detail = detail
    }

    /// One sentence saying what failed and what to do about it.
    public var description: String {
        let reason = errno.map { " (" + String(cString: strerror($0)) + ")" } ?? ""
        let more = detail.map { ": \($0)" } ?? ""
        let file = path ?? "the file"
        switch code {
        case .keyFileExists:
            return "Refusing to overwrite the existing key file \(file); choose another --out directory or move the old keys away first."
        case .directoryUnwritable:
            return "Could not create the directory \(file)\(reason); check its parent's permissions."
        case .fileUnwritable:
            return "Could not write \(file)\(reason); check the directory's permissions and free space."
        case .untrustedDirectory:
            return detail ?? "Refusing to write in \(file): another user could change it; make it yours and not writable by others."
        case .fileUnreadable:
            return "Could not read \(file)\(reason); check that it exists and is readable."
        case .invalidPrivateKey:
            return "The private key \(file) is not an Ed25519 PKCS#8 PEM key\(more); use the directive.key written by 'rollbackctl keygen'."
        case .invalidPublicKey:
            return "The public key \(path.map { "\($0) " } ?? "")is not an Ed25519 PEM public key\(more); use the directive.pub written by 'rollbackctl keygen'."
        case .invalidDirective:
            return "The directive is invalid\(more); fix the fields and sign again."
        case .cryptoFailed:
            return "libcrypto failed\(more); check that the system's OpenSSL 3 is installed and working."
        }
    }
}
