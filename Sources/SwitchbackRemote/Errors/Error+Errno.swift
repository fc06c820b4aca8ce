#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Error {
    /// The POSIX errno behind a Foundation file error, if there is one: the error itself when it
    /// is a `POSIXError`, or the `POSIXError` a `CocoaError` carries as its underlying error.
    var underlyingErrno: Int32? {
        if let posix = self as? POSIXError { return posix.code.rawValue }
        if let cocoa = self as? CocoaError, let posix = cocoa.underlying as? POSIXError { return posix.code.rawValue }
        return nil
    }
}
