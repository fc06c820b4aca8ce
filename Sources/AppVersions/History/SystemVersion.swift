#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The operating system's identity as `/etc/os-release` states it.
///
/// OS versions are not SemVer (`12`, `24.04`, or nothing on rolling releases), so
/// they are compared for equality only.
public struct SystemVersion: Sendable, Hashable, CustomStringConvertible {
    /// The `ID` field, such as `debian` or `ubuntu`.
    public var id: String
    /// The `VERSION_ID` field, such as `12` or `24.04`; empty when absent.
    public var versionID: String
    /// The `PRETTY_NAME` field, such as `Debian GNU/Linux 12 (bookworm)`; empty when absent.
    public var prettyName: String

    /// Creates a system version from its fields.
    public init(id: String, versionID: String, prettyName: String = "") {
        self.id = id
        self.versionID = versionID
        self.prettyName = prettyName
    }

    /// The pretty name if there is one, else `id versionID`.
    public var description: String {
        prettyName.isEmpty ? "\(id) \(versionID)" : prettyName
    }

    /// The standard location of the os-release file.
    public static let defaultOSReleasePath = "/etc/os-release"

    /// Reads and parses an os-release file (see `os-release(5)`).
    ///
    /// Returns `nil` when the file is missing, unreadable or names no system: the
    /// OS version is information, never a reason to stop the app.
    public static func read(osReleasePath path: String = defaultOSReleasePath) -> SystemVersion? {
        guard let bytes = try? FileIO.readFile(atPath: path) else { return nil }
        return parse(osRelease: String(decoding: bytes, as: UTF8.self))
    }

    /// Parses the text of an os-release file; `nil` if it has neither `ID`, `VERSION_ID` nor `PRETTY_NAME`.
    public static func parse(osRelease text: String) -> SystemVersion? {
        var fields: [String: String] = [:]
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            var line = rawLine.drop(while: { $0 == " " || $0 == "\t" })
            while let last = line.last, last == " " || last == "\t" { line = line.dropLast() }
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals])
            fields[key] = unquote(line[line.index(after: equals)...])
        }
        let id = fields["ID"] ?? ""
        let versionID = fields["VERSION_ID"] ?? ""
        let prettyName = fields["PRETTY_NAME"] ?? ""
        if id.isEmpty && versionID.isEmpty && prettyName.isEmpty { return nil }
        return SystemVersion(id: id.isEmpty ? "linux" : id, versionID: versionID, prettyName: prettyName)
    }

    /// Removes shell-style quotes and backslash escapes from an os-release value.
    static func unquote(_ value: Substring) -> String {
        var text = value
        guard let first = text.first, first == "\"" || first == "'" else { return String(text) }
        text = text.dropFirst()
        if text.last == first { text = text.dropLast() }
        var result = ""
        var escaping = false
        for character in text {
            if escaping {
                result.append(character)
                escaping = false
            } else if character == "\\" && first == "\"" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        return result
    }
}
