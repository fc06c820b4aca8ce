import Foundation

/// The bundler's one error type: a code callers branch on, the path involved, and a
/// message that is one sentence saying what to do.
public struct BundlerError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Equatable {
        /// An option is missing, unknown or malformed (exit 64).
        case usage
        /// The app package cannot be read or declares no usable product.
        case package
        /// The git history cannot give the previous release.
        case history
        /// `swift build` failed.
        case build
        /// An ELF file could not be read.
        case elfInvalid
        /// A library a shipped file needs cannot be found or placed.
        case library
        /// The previous release's artifact is wrong, modified or of another commit or toolchain.
        case artifact
        /// A tool the bundler runs is missing or failed.
        case tool
        /// Writing the bundle failed.
        case output
    }

    public var code: Code
    public var message: String
    public var path: String?

    public init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    public var description: String { message }

    /// The exit code `switchback-bundle` uses: 64 for usage errors, 1 for the rest.
    public var exitCode: Int32 { code == .usage ? 64 : 1 }
}
