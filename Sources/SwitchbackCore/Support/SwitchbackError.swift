#if canImport(Glibc)
import Glibc
#endif

/// The one error type of SwitchbackCore: what failed, the errno or path involved, and a
/// sentence a user can act on.
public struct SwitchbackError: Error, CustomStringConvertible, Equatable, Sendable {
    /// What kind of failure this is; tests and callers branch on it.
    public enum Code: String, Sendable {
        case fileNotFound
        case ioFailure
        case permissionDenied
        case insecurePermissions
        case manifestMissing
        case manifestInvalid
        case stateInvalid
        case stateFromNewerFormat
        case slotMissing
        case slotNotRegularFile
        case slotTruncated
        case slotSizeMismatch
        case slotNotELF
        case slotHashMismatch
        case slotLoadFailed
        case slotSymbolMissing
        case slotABIMismatch
        /// A library the bundle carries (`lib/`) is not the file its manifest records.
        case libraryMismatch
        /// A program of the bundle Switchback would run (`bin/rollbackctl-remote`) is not a
        /// regular, executable ELF file.
        case programNotRunnable
        case cryptoUnavailable
        case invalidArgument
        case lockFailed
        /// Nothing names a state directory (no SWITCHBACK_STATE_DIR, and HOME unset or /):
        /// a broken environment, not a usage error.
        case noStateDirectory
        /// A build's planning run (`PendingSteps`) failed, crashed, hung or printed something
        /// that is not a plan: it cannot say which data steps it runs at its start.
        case planningFailed
    }

    /// What kind of failure this is.
    public var code: Code
    /// The errno copied right after the failing call, if any.
    public var errno: Int32?
    /// The file involved, if any.
    public var path: String?
    /// One whole sentence: what was found and what to do.
    public var message: String

    /// Makes an error; `message` should be one sentence that tells the user what to do.
    public init(_ code: Code, _ message: String, path: String? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.errno = errno
    }

    public var description: String { message }

    /// The message without its full stop, to quote inside another sentence.
    public var clause: String { message.hasSuffix(".") ? String(message.dropLast()) : message }

    /// An error for a failed system call on `path`, with `strerror(errno)` in the sentence.
    package static func system(_ call: String, path: String, errno: Int32) -> SwitchbackError {
        let code: Code
        switch errno {
        case ENOENT: code = .fileNotFound
        case EACCES, EPERM: code = .permissionDenied
        default: code = .ioFailure
        }
        return SwitchbackError(code, "\(call) \(path) failed: \(errorString(errno)).", path: path, errno: errno)
    }
}

/// `strerror(3)` as a Swift string.
package func errorString(_ number: Int32) -> String {
    String(cString: strerror(number))
}
