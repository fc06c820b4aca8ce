/// The version and build of the code that is running now, handed in by the caller.
///
/// AppVersions never reads an Info.plist or any global: the app (or the launcher's
/// context) passes this value in, and tests pass whatever they like.
///
/// ```swift
/// let running = RunningVersion(version: "2.1.0", build: "9f3c2ab")
/// let stamped = RunningVersion(version: try Version(parsing: stampedString), build: stampedBuild)
/// ```
///
/// The build is a free-form string (a build number, a commit hash) compared for
/// equality only: the same version with a different build is an *update*.
public struct RunningVersion: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The marketing version, ordered by SemVer precedence.
    public var version: Version
    /// A free-form build identifier; may be empty.
    public var build: String

    /// Creates a running version from a version and a build string.
    public init(version: Version, build: String = "") {
        self.version = version
        self.build = build
    }

    /// `1.2.0 (build 9f3c2ab)`, or just the version when the build is empty.
    public var description: String {
        build.isEmpty ? version.description : "\(version) (build \(build))"
    }

    /// Whether the version (build metadata included) and the build are exactly those of `other`.
    public func isIdentical(to other: RunningVersion) -> Bool {
        version.isIdentical(to: other.version) && build == other.build
    }
}
