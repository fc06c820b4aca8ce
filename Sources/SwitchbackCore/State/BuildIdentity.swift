/// One build of AppCore, wherever it sits: the SHA-256 of the shipped file, and its version
/// for messages. A rollback and a health verdict are about builds, not slot positions, so
/// that they survive the next release moving a build from one slot to the other.
public struct BuildIdentity: Sendable, Equatable {
    /// The SHA-256 of the slot file, lowercase hex (the manifest's `<slot>.sha256`).
    public var sha256: String
    /// The version the build reports (the manifest's `<slot>.version`).
    public var version: String

    public init(sha256: String, version: String) {
        self.sha256 = sha256
        self.version = version
    }

    /// The build in `slot` of `manifest`.
    public init(_ manifest: Manifest, _ slot: BuildSlot) {
        self.init(sha256: manifest[slot].sha256, version: manifest[slot].version)
    }

    /// "1.2.0 (SHA-256 3f2a9c01d4e5)": the version and the first 12 digits of the hash (not
    /// the manifest's `build`, which is the commit it was built from).
    public var description: String { "\(version) (SHA-256 \(sha256.prefix(12)))" }

    /// True for 64 lowercase hex digits.
    static func isSHA256(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// Bounds on the text Switchback stores and takes from operators (numbers have theirs in
/// `ValueRange`), so that no file grows without limit.
public enum Limits {
    /// The longest reason an operator may give (bytes of UTF-8); longer is a usage error.
    public static let reasonBytes = 1000
    /// The longest reason stored in a file (a directive's or a failure's, already bounded
    /// by their sources, is cut here).
    public static let storedReasonBytes = 2000

    /// `text` cut to at most `bytes` bytes of UTF-8, on a scalar boundary, marked with "…".
    public static func truncated(_ text: String, bytes: Int = storedReasonBytes) -> String {
        guard text.utf8.count > bytes else { return text }
        var out = String.UnicodeScalarView()
        var used = 0
        for scalar in text.unicodeScalars {
            let width = String(scalar).utf8.count
            if used + width > bytes - 3 { break }
            out.append(scalar)
            used += width
        }
        return String(out) + "…"
    }
}
