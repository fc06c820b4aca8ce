#if canImport(Glibc)
import Glibc
#endif
import RollbackCtlKit
import SwitchbackFiles

/// Writes a file at a path the operator chose (`rollbackctl sign --out`, `renew --out`,
/// `rollout --out` and `--state`).
///
/// The operator named the path, so links in the directories above it are followed as the
/// kernel would; but the directory that holds the file is opened and checked through the
/// file layer (owned by this user or root, and writable by no one else unless sticky like
/// /tmp), and the file is replaced there relative to its descriptor: a new temporary file
/// (`O_EXCL | O_NOFOLLOW`), then `renameat`. A link another user planted at the name (or at
/// the temporary name) is replaced or refused, never written through; another user's file
/// in a sticky directory cannot be replaced (the kernel refuses the rename).
enum OutputFile {
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(CommandError) {
        let absolute = path.hasPrefix("/") ? path : currentDirectory() + "/" + path
        let slash = absolute.lastIndex(of: "/")!
        let parent = slash == absolute.startIndex ? "/" : String(absolute[..<slash])
        let name = String(absolute[absolute.index(after: slash)...])
        let operatorsPolicy = TrustPolicy { info, here, role, what in
            // Links on the way: the operator's choice (only the holder's check matters here).
            role == .link ? nil : TrustPolicy.stickyHolder.refusal(info, here, role, what)
        }
        do {
            let directory = try CheckedDirectory.open(parent, what: "directory of \(path)", policy: operatorsPolicy)
            try directory.replace(name, with: bytes, mode: mode)
        } catch {
            if error.code == .untrusted { throw .failure(error.message) }
            throw .failure("Could not write \(path): \(error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message); check the directory's permissions and free space.")
        }
    }

    /// Opens (creating, mode 0600) a lock file at a path the operator chose, in its checked
    /// directory as `write` does, never through a link at the name; the caller closes it.
    static func openLockFile(_ path: String) throws(CommandError) -> Int32 {
        let absolute = path.hasPrefix("/") ? path : currentDirectory() + "/" + path
        let slash = absolute.lastIndex(of: "/")!
        let parent = slash == absolute.startIndex ? "/" : String(absolute[..<slash])
        let name = String(absolute[absolute.index(after: slash)...])
        do {
            let directory = try CheckedDirectory.open(parent, what: "directory of \(path)", policy: operatorsPolicy)
            guard let fd = try directory.openFile(name, flags: O_RDWR | O_CREAT, mode: 0o600, what: "lock file") else {
                throw CommandError.failure("Could not open the lock file \(path).")
            }
            return fd
        } catch let error as FileError {
            if error.code == .untrusted { throw .failure(error.message) }
            throw .failure("Could not open the lock file \(path): \(error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message); check the directory's permissions.")
        } catch let error as CommandError {
            throw error
        } catch {
            throw .failure("Could not open the lock file \(path): \(error).")
        }
    }

    /// Links on the way are the operator's choice (only the holder's check matters here).
    static var operatorsPolicy: TrustPolicy {
        TrustPolicy { info, here, role, what in
            role == .link ? nil : TrustPolicy.stickyHolder.refusal(info, here, role, what)
        }
    }

    static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
