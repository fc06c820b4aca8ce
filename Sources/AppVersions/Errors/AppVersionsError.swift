#if canImport(Glibc)
import Glibc
#endif

/// The one error type thrown by AppVersions.
///
/// Every failure carries a ``Code`` to branch on, the path or identifier involved,
/// and a ``description`` that is one whole sentence a user can act on.
/// Programmer mistakes (a step registered twice) trap instead of throwing.
public struct AppVersionsError: Error, CustomStringConvertible {
    /// What went wrong, for code that needs to branch on it.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// A string is not a valid version.
        case invalidVersion
        /// A ledger file exists but is damaged or is not a ledger.
        case corruptLedger
        /// A ledger file was written by a newer, incompatible format.
        case unsupportedLedgerFormat
        /// Reading a ledger failed (permissions, I/O error).
        case readFailed
        /// Writing a ledger failed (disk full, permissions, I/O error).
        case writeFailed
        /// A custom ``LedgerStore`` threw an error that is not an `AppVersionsError`.
        case storeFailed
        /// A migration step with the ``MigrationStep/ErrorPolicy/stop`` policy threw.
        case stepFailed
        /// A downgrade would strand data: a step to undo has neither a revert nor a snapshot.
        case downgradeRefused
        /// A step's revert threw during a downgrade, or a snapshot could not be taken or restored.
        case downgradeFailed
    }

    /// What went wrong.
    public let code: Code
    /// The file involved, if any.
    public let path: String?
    /// The identifier involved, if any: the offending version string or the step name.
    public let subject: String?
    /// The `errno` value of the failed system call, if any.
    public let errno: Int32?
    /// The error that caused this one, if any (for ``Code/stepFailed``, the step's own error).
    public let underlying: (any Error)?
    /// One sentence that says what happened and what to do about it.
    public let description: String

    /// Creates an error; used by AppVersions and by custom stores that want to report failures in kind.
    public init(
        _ code: Code,
        _ description: String,
        path: String? = nil,
        subject: String? = nil,
        errno: Int32? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.description = description
        self.path = path
        self.subject = subject
        self.errno = errno
        self.underlying = underlying
    }
}

extension AppVersionsError {
    /// Wraps any error thrown by a store so callers only ever see `AppVersionsError`.
    static func wrappingStoreError(_ error: any Error, scope: Scope) -> AppVersionsError {
        if let error = error as? AppVersionsError { return error }
        return AppVersionsError(
            .storeFailed,
            "The ledger store failed for scope \"\(scope.name)\": \(error); check the store's backing storage and try again.",
            subject: scope.name,
            underlying: error
        )
    }

    /// The text of `strerror` for an errno value.
    static func describe(errno value: Int32) -> String {
        String(cString: strerror(value))
    }
}
