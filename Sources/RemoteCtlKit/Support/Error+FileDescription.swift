#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension Error {
    /// What a failed file read or write says about itself, word for word as Foundation's
    /// `localizedDescription` on Linux ("The operation could not be completed. The file
    /// doesn’t exist."), without Foundation's localization libraries.
    var fileErrorDescription: String {
        let prefix = "The operation could not be completed. "
        if let cocoa = self as? CocoaError {
            if let text = cocoa.userInfo["NSLocalizedDescription"] as? String { return text }
            return prefix + (Self.cocoaFileReasons[cocoa.code.rawValue] ?? "(NSCocoaErrorDomain error \(cocoa.code.rawValue).)")
        }
        if let posix = self as? POSIXError {
            return prefix + String(cString: strerror(posix.code.rawValue))
        }
        return prefix + "(\(_domain) error \(_code).)"
    }

    /// Foundation's failure reasons for the file error codes of `CocoaError`.
    private static var cocoaFileReasons: [Int: String] {
        [
            4: "The file doesn’t exist.",
            255: "The file couldn’t be locked.",
            257: "You don’t have permission.",
            258: "The file name is invalid.",
            259: "The file isn’t in the correct format.",
            260: "The file doesn’t exist.",
            261: "The specified text encoding isn’t applicable.",
            262: "The specified URL type isn’t supported.",
            263: "The item is too large.",
            264: "The text encoding of the contents couldn’t be determined.",
            513: "You don’t have permission.",
            514: "The file name is invalid.",
            516: "A file with the same name already exists.",
            517: "The specified text encoding isn’t applicable.",
            518: "The specified URL type isn’t supported.",
            640: "There isn’t enough space.",
            642: "The volume is read only.",
        ]
    }
}
