import Foundation

extension NSError {
    /// The POSIX errno behind a Foundation file error, if there is one.
    var underlyingErrno: Int32? {
        if domain == NSPOSIXErrorDomain { return Int32(code) }
        if let underlying = userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return Int32(underlying.code)
        }
        return nil
    }
}
