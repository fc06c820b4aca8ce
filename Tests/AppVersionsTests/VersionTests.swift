import AppVersions
import Foundation
import Testing

@Suite("Version")
struct VersionTests {
    // MARK: Parsing

    static let specValid = [
        "0.0.4", "1.2.3", "10.20.30", "1.1.2-prerelease+meta", "1.1.2+meta", "1.1.2+meta-valid",
        "1.0.0-alpha", "1.0.0-beta", "1.0.0-alpha.beta", "1.0.0-alpha.beta.1", "1.0.0-alpha.1",
        "1.0.0-alpha0.valid", "1.0.0-alpha.0valid", "1.0.0-alpha-a.b-c-somethinglong+build.1-aef.1-its-okay",
        "1.0.0-rc.1+build.1", "2.0.0-rc.1+build.123", "1.2.3-beta", "10.2.3-DEV-SNAPSHOT", "1.2.3-SNAPSHOT-123",
        "1.0.0", "2.0.0", "1.1.7", "2.0.0+build.1848", "2.0.1-alpha.1227", "1.0.0-alpha+beta",
        "1.2.3----RC-SNAPSHOT.12.9.1--.12+788", "1.2.3----R-S.12.9.1--.12+meta", "1.2.3----RC-SNAPSHOT.12.9.1--.12",
        "1.0.0+0.build.1-rc.10000aaa-kk-0.1", "1.0.0-0A.is.legal", "1.0.0+21AF26D3----117B344092BD",
    ]

    static let specInvalid = [
        "1", "1.2", "1.2.3-0123", "1.2.3-0123.0123", "1.1.2+.123", "+invalid", "-invalid", "-invalid+invalid",
        "-invalid.01", "alpha", "alpha.beta", "alpha.beta.1", "alpha.1", "alpha+beta", "alpha_beta", "alpha.",
        "alpha..", "beta", "1.0.0-alpha_beta", "-alpha.", "1.0.0-alpha..", "1.0.0-alpha..1", "1.0.0-alpha...1",
        "01.1.1", "1.01.1", "1.1.01", "1.2.3.DEV", "1.2-SNAPSHOT", "1.2.31.2.3----RC-SNAPSHOT.12.09.1--..12+788",
        "1.2-RC-SNAPSHOT", "-1.0.3-gamma+b7718", "+justmeta", "9.8.7+meta+meta", "9.8.7-whatever+meta+meta",
        "", "1.0.0-", "1.0.0+", " 1.0.0", "v1.0.0",
    ]

    @Test("Accepts every valid example of the SemVer 2.0 spec", arguments: specValid)
    func parsesSpecExamples(_ text: String) throws {
        let version = try Version(parsing: text)
        #expect(version.description == text)
    }

    @Test("Rejects every invalid example of the SemVer 2.0 spec", arguments: specInvalid)
    func rejectsSpecCounterExamples(_ text: String) {
        let error = #expect(throws: AppVersionsError.self) { try Version(parsing: text) }
        #expect(error?.code == .invalidVersion)
        #expect(error?.subject == text)
        #expect(error?.description.contains("is not a valid version") == true)
    }

    @Test func parsesParts() throws {
        let version = try Version(parsing: "1.2.3-beta.11+exp.sha.5114f85")
        #expect(version.major == 1)
        #expect(version.minor == 2)
        #expect(version.patch == 3)
        #expect(version.prereleaseIdentifiers == ["beta", "11"])
        #expect(version.buildMetadataIdentifiers == ["exp", "sha", "5114f85"])
        #expect(version.isPrerelease)
    }

    @Test func tolerantParseFillsInMissingParts() throws {
        #expect(try Version(tolerant: "1.2") == Version(1, 2, 0))
        #expect(try Version(tolerant: "3") == Version(3, 0, 0))
        #expect(try Version(tolerant: "v1.2.3") == Version(1, 2, 3))
        #expect(try Version(tolerant: "  V2.0 \n") == Version(2, 0, 0))
        #expect(try Version(tolerant: "1.02.003") == Version(1, 2, 3))
        #expect(try Version(tolerant: "1.2-beta.1+b5") == Version(1, 2, 0, prereleaseIdentifiers: ["beta", "1"]))
        let short = "1.2", garbage = "not a version"
        #expect(Version(short) == Version(1, 2, 0))
        #expect(Version(garbage) == nil)
    }

    @Test("Tolerant parse still rejects garbage with a clear message", arguments: [
        "", "v", "1.2.3.4", "1..2", "1.x", "1.2.3-", "1.2.3-01", "1.2.3+a+b", "one", "1.2.3-beta_1",
    ])
    func tolerantParseRejects(_ text: String) {
        let error = #expect(throws: AppVersionsError.self) { try Version(tolerant: text) }
        #expect(error?.code == .invalidVersion)
        #expect(error?.description.hasPrefix("\"\(text)\" is not a valid version: ") == true)
    }

    @Test func explainsWhatIsWrong() {
        let leadingZero = #expect(throws: AppVersionsError.self) { try Version(parsing: "01.2.3") }
        #expect(leadingZero?.description == "\"01.2.3\" is not a valid version: the major number \"01\" has a leading zero; write it as MAJOR.MINOR.PATCH, for example \"1.2.0\", or parse it with Version(tolerant:).")
        let short = #expect(throws: AppVersionsError.self) { try Version(parsing: "1.2") }
        #expect(short?.description.contains("it has 2 numeric parts instead of 3") == true)
        let huge = #expect(throws: AppVersionsError.self) {
            try Version(parsing: "99999999999999999999999.999999999999999999.99999999999999999")
        }
        #expect(huge?.code == .invalidVersion)
        #expect(huge?.description.contains("is too large") == true)
    }

    // MARK: Precedence

    @Test func followsTheSpecPrecedenceExamples() throws {
        let chain = ["1.0.0", "2.0.0", "2.1.0", "2.1.1"]
        let prerelease = [
            "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
            "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0",
        ]
        for list in [chain, prerelease] {
            let versions = try list.map { try Version(parsing: $0) }
            for (index, lower) in versions.enumerated() {
                for higher in versions[(index + 1)...] {
                    #expect(lower < higher, "\(lower) < \(higher)")
                    #expect(!(higher < lower))
                    #expect(lower != higher)
                }
            }
            #expect(versions.shuffled().sorted() == versions)
        }
    }

    @Test func ignoresBuildMetadataInPrecedence() throws {
        let a = try Version(parsing: "1.0.0+20130313144700")
        let b = try Version(parsing: "1.0.0+exp.sha.5114f85")
        #expect(a == b)
        #expect(!(a < b) && !(b < a))
        #expect(a.hashValue == b.hashValue)
        #expect(!a.isIdentical(to: b))
        #expect(a.isIdentical(to: try Version(parsing: "1.0.0+20130313144700")))
        #expect(try Version(parsing: "1.0.0-alpha+001") < Version(parsing: "1.0.0"))
    }

    @Test func comparesHugeNumericIdentifiersWithoutOverflow() throws {
        let small = try Version(parsing: "1.0.0-99999999999999999999998")
        let large = try Version(parsing: "1.0.0-99999999999999999999999")
        let longer = try Version(parsing: "1.0.0-100000000000000000000000")
        #expect(small < large)
        #expect(large < longer)
        #expect(try longer < Version(parsing: "1.0.0-a"))
    }

    @Test func comparesWithLiterals() {
        let version: Version = "2.1"
        #expect(version >= "2.1.0")
        #expect(version < "2.1.1-rc.1")
        #expect(version > "2.1.0-rc.1")
    }

    // MARK: Conversions

    @Test func convertsLosslesslyToAndFromStrings() throws {
        for text in Self.specValid {
            let version = try Version(parsing: text)
            let again = try #require(Version(version.description))
            #expect(again.isIdentical(to: version))
        }
        #expect(Version(1, 2, 3, prereleaseIdentifiers: ["rc", "1"], buildMetadataIdentifiers: ["abc"]).description == "1.2.3-rc.1+abc")
    }

    @Test func codesAsASingleString() throws {
        let versions = try ["1.2.3", "1.0.0-rc.1+build.5"].map { try Version(parsing: $0) }
        let data = try JSONEncoder().encode(versions)
        #expect(String(decoding: data, as: UTF8.self) == #"["1.2.3","1.0.0-rc.1+build.5"]"#)
        let decoded = try JSONDecoder().decode([Version].self, from: data)
        #expect(zip(decoded, versions).allSatisfy { $0.isIdentical(to: $1) })
        #expect(try JSONDecoder().decode([Version].self, from: Data(#"["1.2"]"#.utf8)) == [Version(1, 2, 0)])
    }

    @Test func reportsUndecodableVersions() {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Version].self, from: Data(#"["1.2.x"]"#.utf8))
        }
    }

    @Test func runningVersionComparesBuildsForEqualityOnly() throws {
        let a = RunningVersion(version: "1.2", build: "9f3c2ab")
        #expect(a.version == Version(1, 2, 0))
        #expect(a.description == "1.2.0 (build 9f3c2ab)")
        #expect(RunningVersion(version: Version(1, 0, 0)).description == "1.0.0")
        #expect(a != RunningVersion(version: a.version, build: "0000000"))
        let data = try JSONEncoder().encode(a)
        #expect(try JSONDecoder().decode(RunningVersion.self, from: data) == a)
    }

    // MARK: Randomised

    /// An independent reading of SemVer section 11, to check `<` against.
    static func referenceCompare(_ a: Version, _ b: Version) -> Int {
        for (x, y) in [(a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)] where x != y {
            return x < y ? -1 : 1
        }
        let left = a.prereleaseIdentifiers, right = b.prereleaseIdentifiers
        if left.isEmpty && right.isEmpty { return 0 }
        if left.isEmpty { return 1 }
        if right.isEmpty { return -1 }
        var index = 0
        while true {
            if index == left.count && index == right.count { return 0 }
            if index == left.count { return -1 }
            if index == right.count { return 1 }
            let x = left[index], y = right[index]
            let xNumber = x.allSatisfy(\.isNumber) ? Int(x) : nil
            let yNumber = y.allSatisfy(\.isNumber) ? Int(y) : nil
            switch (xNumber, yNumber) {
            case let (p?, q?) where p != q: return p < q ? -1 : 1
            case (_?, nil): return -1
            case (nil, _?): return 1
            case (nil, nil) where x != y: return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8)) ? -1 : 1
            default: break
            }
            index += 1
        }
    }

    static func randomVersion(using generator: inout SeededGenerator) -> Version {
        let pieces = ["alpha", "beta", "rc", "0", "1", "2", "10", "11", "a1", "1a", "-", "A", "Z9", "alpha-2"]
        let prerelease = (0..<Int.random(in: 0...3, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }
        let metadata = (0..<Int.random(in: 0...2, using: &generator)).map { _ in ["001", "sha", "x-y", "7"].randomElement(using: &generator)! }
        return Version(
            Int.random(in: 0...2, using: &generator),
            Int.random(in: 0...2, using: &generator),
            Int.random(in: 0...2, using: &generator),
            prereleaseIdentifiers: prerelease,
            buildMetadataIdentifiers: metadata
        )
    }

    @Test("Random versions order like an independent implementation", arguments: [1, 2, 3, 42, 20_240_601] as [UInt64])
    func randomisedComparisons(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let versions = (0..<300).map { _ in Self.randomVersion(using: &generator) }
        for a in versions {
            let parsed = try Version(parsing: a.description)
            #expect(parsed.isIdentical(to: a), "seed \(seed): \(a) round trip")
            for b in versions.prefix(100) {
                let expected = Self.referenceCompare(a, b)
                #expect((a < b) == (expected < 0), "seed \(seed): \(a) < \(b)")
                #expect((a == b) == (expected == 0), "seed \(seed): \(a) == \(b)")
                #expect((a > b) == (expected > 0), "seed \(seed): \(a) > \(b)")
                if a == b { #expect(a.hashValue == b.hashValue) }
            }
        }
        // Sorting agrees with the reference, and the order is transitive.
        let sorted = versions.sorted()
        for (lower, higher) in zip(sorted, sorted.dropFirst()) {
            #expect(Self.referenceCompare(lower, higher) <= 0, "seed \(seed): \(lower) before \(higher)")
        }
        for _ in 0..<500 {
            let x = versions.randomElement(using: &generator)!
            let y = versions.randomElement(using: &generator)!
            let z = versions.randomElement(using: &generator)!
            if x < y && y < z { #expect(x < z, "seed \(seed): \(x) < \(y) < \(z)") }
        }
    }
}
