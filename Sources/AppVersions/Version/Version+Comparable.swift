extension Version: Comparable, Hashable {
    /// Whether two versions have the same precedence; build metadata is ignored.
    public static func == (lhs: Version, rhs: Version) -> Bool {
        lhs.major == rhs.major && lhs.minor == rhs.minor && lhs.patch == rhs.patch
            && lhs.prereleaseIdentifiers == rhs.prereleaseIdentifiers
    }

    /// Hashes the parts that take part in precedence, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(major)
        hasher.combine(minor)
        hasher.combine(patch)
        hasher.combine(prereleaseIdentifiers)
    }

    /// Whether `lhs` has lower precedence than `rhs`, as SemVer 2.0 section 11 defines it.
    public static func < (lhs: Version, rhs: Version) -> Bool {
        if lhs.major != rhs.major { return lhs.major < rhs.major }
        if lhs.minor != rhs.minor { return lhs.minor < rhs.minor }
        if lhs.patch != rhs.patch { return lhs.patch < rhs.patch }
        let left = lhs.prereleaseIdentifiers
        let right = rhs.prereleaseIdentifiers
        // A release has higher precedence than any of its pre-releases.
        if left.isEmpty || right.isEmpty { return !left.isEmpty && right.isEmpty }
        for (a, b) in zip(left, right) where a != b {
            return Self.identifier(a, precedes: b)
        }
        return left.count < right.count
    }

    /// Compares two different pre-release identifiers.
    static func identifier(_ a: String, precedes b: String) -> Bool {
        let aNumeric = VersionParser.isNumeric(a)
        let bNumeric = VersionParser.isNumeric(b)
        switch (aNumeric, bNumeric) {
        case (true, true):
            // No leading zeros, so a shorter numeral is a smaller number; this works
            // for identifiers of any length, even beyond Int.
            if a.utf8.count != b.utf8.count { return a.utf8.count < b.utf8.count }
            return a.utf8.lexicographicallyPrecedes(b.utf8)
        case (true, false):
            return true
        case (false, true):
            return false
        case (false, false):
            return a.utf8.lexicographicallyPrecedes(b.utf8)
        }
    }
}
