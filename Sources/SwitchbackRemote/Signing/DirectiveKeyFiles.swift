#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwitchbackCrypto
#if canImport(Glibc)
import Glibc
#endif

/// A key pair on disk, as written by `rollbackctl keygen --out DIR`:
/// `DIR/directive.key` (PKCS#8 PEM, mode 0600) and `DIR/directive.pub` (PEM, mode 0644).
public struct DirectiveKeyFiles: Sendable, Equatable {
    /// The private key's file name inside the directory.
    public static let privateKeyFileName = "directive.key"
    /// The public key's file name inside the directory.
    public static let publicKeyFileName = "directive.pub"

    /// Where the private key is (mode 0600).
    public let privateKeyURL: URL
    /// Where the public key is (mode 0644); this file goes into the manifest.
    public let publicKeyURL: URL
    /// The key id that signatures by this key carry.
    public let keyID: String

    /// Generates a fresh Ed25519 key pair and writes both files into `directory`
    /// (created with mode 0700 if missing).
    ///
    /// Never overwrites: the private key is created with `O_EXCL` and mode 0600 from its
    /// first byte, and both files are flushed with `fsync`. If either file already exists
    /// nothing is written. Throws ``RemoteError`` with code ``RemoteError/Code/keyFileExists``,
    /// ``RemoteError/Code/directoryUnwritable``, ``RemoteError/Code/fileUnwritable`` or
    /// ``RemoteError/Code/cryptoFailed``.
    public static func generate(in directory: URL) throws -> DirectiveKeyFiles {
        let privateURL = directory.appendingPathComponent(privateKeyFileName)
        let publicURL = directory.appendingPathComponent(publicKeyFileName)
        for url in [privateURL, publicURL] where FileManager.default.fileExists(atPath: url.path) {
            throw RemoteError(.keyFileExists, path: url.path)
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw RemoteError(.directoryUnwritable, errno: error.underlyingErrno, path: directory.path)
        }
        let key: Ed25519PrivateKey
        let privatePEM: String
        let publicPEM: String
        do {
            key = try Ed25519PrivateKey.generate()
            privatePEM = try key.pemRepresentation()
            publicPEM = try key.publicKey.pemRepresentation()
        } catch let error as CryptoError {
            throw RemoteError(.cryptoFailed, detail: error.description)
        }
        try writeNewFile(privateURL.path, contents: privatePEM, mode: 0o600)
        do {
            try writeNewFile(publicURL.path, contents: publicPEM, mode: 0o644)
        } catch {
            _ = unlink(privateURL.path)
            throw error
        }
        return DirectiveKeyFiles(privateKeyURL: privateURL, publicKeyURL: publicURL, keyID: key.publicKey.keyID)
    }

    /// Creates `path` exclusively with `mode`, writes `contents`, `fsync`s and closes it.
    /// On failure the partial file is removed.
    private static func writeNewFile(_ path: String, contents: String, mode: mode_t) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        if fd < 0 {
            let code = errno
            throw RemoteError(code == EEXIST ? .keyFileExists : .fileUnwritable, errno: code == EEXIST ? nil : code, path: path)
        }
        var failure: Int32?
        // The umask may only remove bits; set the mode explicitly so it is exactly `mode`.
        if fchmod(fd, mode) != 0 { failure = errno }
        let bytes = Array(contents.utf8)
        var written = 0
        while failure == nil && written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
            } else {
                written += count
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = errno }
        if close(fd) != 0 && failure == nil { failure = errno }
        if let failure {
            _ = unlink(path)
            throw RemoteError(.fileUnwritable, errno: failure, path: path)
        }
    }
}
