extension Version {
    /// Parses a strict Semantic Versioning 2.0 string such as `1.2.3`, `1.0.0-rc.1` or `1.0.0+20130313144700`.
    ///
    /// - Throws: ``AppVersionsError`` with code ``AppVersionsError/Code/invalidVersion``
    ///   naming the string and what is wrong with it.
    public init(parsing string: String) throws {
        self = try VersionParser(string, tolerant: false).parse()
    }

    /// Parses the forms people write: `1.2`, `1`, `v1.2.3`, ` 1.02.3 `, as well as anything ``init(parsing:)`` accepts.
    ///
    /// Surrounding whitespace and a leading `v` or `V` are dropped, a missing minor or
    /// patch number counts as 0 and leading zeros in numbers are allowed. Pre-release
    /// and build parts must still be valid SemVer.
    ///
    /// - Throws: ``AppVersionsError`` with code ``AppVersionsError/Code/invalidVersion``
    ///   naming the string and what is wrong with it.
    public init(tolerant string: String) throws {
        self = try VersionParser(string, tolerant: true).parse()
    }
}

/// A hand-written parser over UTF-8 that reports the first problem it finds.
struct VersionParser {
    let original: String
    let tolerant: Bool

    init(_ string: String, tolerant: Bool) {
        self.original = string
        self.tolerant = tolerant
    }

    func fail(_ problem: String) -> AppVersionsError {
        let hint = tolerant
            ? "write it as MAJOR.MINOR.PATCH, for example \"1.2.0\""
            : "write it as MAJOR.MINOR.PATCH, for example \"1.2.0\", or parse it with Version(tolerant:)"
        return AppVersionsError(
            .invalidVersion,
            "\"\(original)\" is not a valid version: \(problem); \(hint).",
            subject: original
        )
    }

    func parse() throws -> Version {
        var text = Substring(original)
        if tolerant {
            text = text.drop(while: { $0.isWhitespace })
            while let last = text.last, last.isWhitespace { text = text.dropLast() }
            if let first = text.first, first == "v" || first == "V" { text = text.dropFirst() }
        }
        if text.isEmpty { throw fail("it is empty") }

        var core = text
        var prerelease: Substring? = nil
        var metadata: Substring? = nil
        if let plus = core.firstIndex(of: "+") {
            metadata = core[core.index(after: plus)...]
            core = core[..<plus]
        }
        if let dash = core.firstIndex(of: "-") {
            prerelease = core[core.index(after: dash)...]
            core = core[..<dash]
        }

        let parts = core.split(separator: ".", omittingEmptySubsequences: false)
        if tolerant {
            guard (1...3).contains(parts.count) else {
                throw fail("it has \(parts.count) numeric parts, at most 3 are allowed")
            }
        } else {
            guard parts.count == 3 else {
                throw fail("it has \(parts.count) numeric part\(parts.count == 1 ? "" : "s") instead of 3")
            }
        }
        var numbers: [Int] = []
        for (index, part) in parts.enumerated() {
            let name = ["major", "minor", "patch"][index]
            if part.isEmpty { throw fail("the \(name) number is missing") }
            guard part.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                throw fail("the \(name) number \"\(part)\" is not a non-negative integer")
            }
            if !tolerant && part.utf8.count > 1 && part.utf8.first == 48 {
                throw fail("the \(name) number \"\(part)\" has a leading zero")
            }
            guard let value = Int(part) else {
                throw fail("the \(name) number \"\(part)\" is too large")
            }
            numbers.append(value)
        }
        while numbers.count < 3 { numbers.append(0) }

        var prereleaseIdentifiers: [String] = []
        if let prerelease {
            if prerelease.isEmpty { throw fail("the pre-release part after \"-\" is empty") }
            for identifier in prerelease.split(separator: ".", omittingEmptySubsequences: false) {
                let value = String(identifier)
                if value.isEmpty { throw fail("the pre-release part has an empty identifier") }
                guard Self.isIdentifierCharacters(value) else {
                    throw fail("the pre-release identifier \"\(value)\" may only contain [0-9A-Za-z-]")
                }
                guard Self.isValidPrerelease(value) else {
                    throw fail("the numeric pre-release identifier \"\(value)\" has a leading zero")
                }
                prereleaseIdentifiers.append(value)
            }
        }
        var metadataIdentifiers: [String] = []
        if let metadata {
            if metadata.isEmpty { throw fail("the build metadata part after \"+\" is empty") }
            for identifier in metadata.split(separator: ".", omittingEmptySubsequences: false) {
                let value = String(identifier)
                if value.isEmpty { throw fail("the build metadata part has an empty identifier") }
                guard Self.isIdentifierCharacters(value) else {
                    throw fail("the build metadata identifier \"\(value)\" may only contain [0-9A-Za-z-]")
                }
                metadataIdentifiers.append(value)
            }
        }
        var version = Version.zero
        version.major = numbers[0]
        version.minor = numbers[1]
        version.patch = numbers[2]
        version.prereleaseIdentifiers = prereleaseIdentifiers
        version.buildMetadataIdentifiers = metadataIdentifiers
        return version
    }

    static func isIdentifierCharacters(_ identifier: String) -> Bool {
        !identifier.isEmpty && identifier.utf8.allSatisfy { byte in
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 45
        }
    }

    static func isNumeric(_ identifier: String) -> Bool {
        identifier.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
    }

    static func isValidPrerelease(_ identifier: String) -> Bool {
        guard isIdentifierCharacters(identifier) else { return false }
        if isNumeric(identifier) && identifier.utf8.count > 1 && identifier.utf8.first == 48 { return false }
        return true
    }

    static func isValidBuildMetadata(_ identifier: String) -> Bool {
        isIdentifierCharacters(identifier)
    }
}

extension Version {
    /// Parses a plain `MAJOR.MINOR.PATCH` with no leading zeros, pre-release or build
    /// metadata, straight from bytes; nil for anything else (use the full parser then).
    static func parsePlainRelease(_ bytes: UnsafeBufferPointer<UInt8>) -> Version? {
        var numbers = (0, 0, 0)
        var part = 0
        var value = 0
        var digits = 0
        for byte in bytes {
            if byte >= 48 && byte <= 57 {
                if digits == 1 && value == 0 { return nil }
                if digits >= 18 { return nil }
                value = value * 10 + Int(byte - 48)
                digits += 1
            } else if byte == 46 {
                guard digits > 0, part < 2 else { return nil }
                if part == 0 { numbers.0 = value } else { numbers.1 = value }
                part += 1
                value = 0
                digits = 0
            } else {
                return nil
            }
        }
        guard part == 2, digits > 0 else { return nil }
        numbers.2 = value
        var version = Version.zero
        version.major = numbers.0
        version.minor = numbers.1
        version.patch = numbers.2
        return version
    }
}
