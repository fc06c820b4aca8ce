/// A version number that follows Semantic Versioning 2.0.
///
/// ```swift
/// let v = try Version(parsing: "2.1.0-beta.2+exp.sha.5114f85")
/// v < Version(2, 1, 0)          // true: a pre-release comes before its release
/// Version("1.2") == "1.2.0"     // true: the tolerant form fills in missing parts
/// ```
///
/// Ordering and equality follow SemVer precedence: pre-release identifiers are compared
/// one by one (numeric ones numerically, others in ASCII order, numeric before
/// alphanumeric, more identifiers after fewer), and build metadata is ignored, so
/// `1.0.0+a == 1.0.0+b`. Use ``isIdentical(to:)`` to compare every part.
public struct Version: Sendable {
    /// The major version: incompatible changes.
    public var major: Int
    /// The minor version: compatible additions.
    public var minor: Int
    /// The patch version: compatible fixes.
    public var patch: Int
    /// Pre-release identifiers, the dot-separated parts after `-` (`["beta", "2"]` in `1.0.0-beta.2`).
    public var prereleaseIdentifiers: [String]
    /// Build metadata identifiers, the dot-separated parts after `+`; not part of precedence.
    public var buildMetadataIdentifiers: [String]

    /// Creates a version from its parts.
    ///
    /// Traps if a number is negative or an identifier is not valid SemVer, since such
    /// a value is a programmer mistake; use ``init(parsing:)`` for strings from outside.
    public init(
        _ major: Int,
        _ minor: Int,
        _ patch: Int,
        prereleaseIdentifiers: [String] = [],
        buildMetadataIdentifiers: [String] = []
    ) {
        precondition(major >= 0 && minor >= 0 && patch >= 0,
                     "Version \(major).\(minor).\(patch) has a negative component.")
        for identifier in prereleaseIdentifiers {
            precondition(VersionParser.isValidPrerelease(identifier),
                         "Version pre-release identifier \"\(identifier)\" is not valid SemVer.")
        }
        for identifier in buildMetadataIdentifiers {
            precondition(VersionParser.isValidBuildMetadata(identifier),
                         "Version build metadata identifier \"\(identifier)\" is not valid SemVer.")
        }
        self.major = major
        self.minor = minor
        self.patch = patch
        self.prereleaseIdentifiers = prereleaseIdentifiers
        self.buildMetadataIdentifiers = buildMetadataIdentifiers
    }

    /// `0.0.0`, the lowest release version.
    public static let zero = Version(0, 0, 0)

    /// Whether this is a pre-release (has identifiers after `-`).
    public var isPrerelease: Bool { !prereleaseIdentifiers.isEmpty }

    /// Whether every part, build metadata included, is the same as in `other`.
    public func isIdentical(to other: Version) -> Bool {
        self == other && buildMetadataIdentifiers == other.buildMetadataIdentifiers
    }
}
