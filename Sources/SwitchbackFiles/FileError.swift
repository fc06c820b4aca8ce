#if canImport(Glibc)
import Glibc
#endif

/// The one error type of SwitchbackFiles: a refused directory or file, or a failed system
/// call, with the path involved and a sentence a user can act on.
public struct FileError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Code: String, Sendable {
        /// The directory (or a directory above it, or a link on the way) may be changed by
        /// another user, or a name in it is a symbolic link or not what was expected: no write.
        case untrusted
        /// A system call failed (`errno`).
        case system
    }

    public var code: Code
    /// The errno copied right after the failing call, if any.
    public var errno: Int32?
    /// The file or directory involved.
    public var path: String
    /// One whole sentence: what was found and what to do.
    public var message: String

    public init(_ code: Code, _ message: String, path: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.errno = errno
    }

    public var description: String { message }

    /// A failed system call on `path`: "`call` `path` failed: strerror."
    public static func system(_ call: String, path: String, errno: Int32) -> FileError {
        FileError(.system, "\(call) \(path) failed: \(String(cString: strerror(errno))).", path: path, errno: errno)
    }
}
