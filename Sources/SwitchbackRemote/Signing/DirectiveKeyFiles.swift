#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwitchbackCrypto
import SwitchbackFiles
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
        // The directory is made (mode 0700) and checked through the file layer: owned by this
        // user or root, writable by no one else, no link on the way; the keys are created in it
        // relative to its descriptor, never through a link.
        let checked: CheckedDirectory
        do {
            checked = try CheckedDirectory.open(directory.path, what: "key directory", creating: 0o700)
        } catch {
            if error.code == .untrusted { throw RemoteError(.untrustedDirectory, path: error.path, detail: error.message) }
            throw RemoteError(.directoryUnwritable, errno: error.errno, path: error.path)
        }
        for url in [privateURL, publicURL] where checked.status(of: url.lastPathComponent) != nil {
            throw RemoteError(.keyFileExists, path: url.path)
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
        try writeNewFile(privateURL, in: checked, contents: privatePEM, mode: 0o600)
        do {
            try writeNewFile(publicURL, in: checked, contents: publicPEM, mode: 0o644)
        } catch {
            try? checked.remove(privateURL.lastPathComponent)
            throw error
        }
        return DirectiveKeyFiles(privateKeyURL: privateURL, publicKeyURL: publicURL, keyID: key.publicKey.keyID)
    }

    /// Creates `url` in `directory` exclusively with exactly `mode`, writes `contents`,
    /// `fsync`s and closes it. On failure the partial file is removed.
    private static func writeNewFile(_ url: URL, in directory: CheckedDirectory, contents: String, mode: mode_t) throws {
        do {
            try directory.createNew(url.lastPathComponent, with: Array(contents.utf8), mode: mode)
        } catch {
            throw RemoteError(error.errno == EEXIST ? .keyFileExists : .fileUnwritable, errno: error.errno == EEXIST ? nil : error.errno, path: url.path)
        }
    }
}
