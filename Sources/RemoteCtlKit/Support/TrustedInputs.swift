#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import RollbackCtlKit
import SwitchbackCore
import SwitchbackRemote

/// The files `sign` acts on as given, read through `TrustedFile` (the checks a slot passes:
/// path, owner, mode, read from the checked descriptor): the command may run as root, and a
/// key or a directive another user could replace would have it sign their content.
/// A refusal is one sentence naming the file and why (exit 1).
enum TrustedInputs {
    /// A signer with the private keys in `keyFiles` (`--key`), each read strictly.
    static func signer(keyFiles: [String]) throws(CommandError) -> DirectiveSigner {
        var keys: [(path: String, pem: String)] = []
        for file in keyFiles {
            // Named as before (absolute, as URL(fileURLWithPath:) gave it) in the other errors.
            let path = URL(fileURLWithPath: file).path
            let bytes: [UInt8]?
            do { bytes = try TrustedFile.read(file, what: "private key") } catch { throw .failure(error.message) }
            guard let bytes else { throw .failure(RemoteError(.fileUnreadable, errno: ENOENT, path: path).description) }
            keys.append((path, String(decoding: bytes, as: UTF8.self)))
        }
        do { return try DirectiveSigner(keyPEMs: keys) } catch { throw .failure(String(describing: error)) }
    }

    /// The directive envelope at `path` that `sign --renew` re-signs, read strictly: a file
    /// another user could swap for an older directive this key signed would have it renew
    /// that decision. Nil when it does not exist.
    static func directive(at path: String) throws(CommandError) -> Data? {
        do { return try TrustedFile.read(path, what: "directive file", limit: 1 << 20).map { Data($0) } } catch {
            throw .failure(error.message)
        }
    }
}
