/// Text that came from outside this process (a server's answer, an app's reason, a file's
/// content), made safe once, by Unicode scalars, before it is stored, printed, journaled or
/// sent to another process.
///
/// What it guarantees of ``text``:
/// - no C0 control (U+0000–U+001F), DEL (U+007F), C1 control (U+0080–U+009F), line or
///   paragraph separator (U+2028, U+2029) and no bidirectional override or isolate
///   (U+200E, U+200F, U+202A–U+202E, U+2066–U+2069): a line break, a tab or NEL
///   (U+0085) becomes one space (a run of them, `"\r\n"` among them, one space), every
///   other one is written out as `\u{1B}`, visible and inert. A terminal gets no escape
///   sequence, a line-based reader no second record;
/// - at most `limit` scalars, then `...`.
///
/// It works on `unicodeScalars`, never on `Character`s: in Swift `"\r\n"` is one
/// `Character`, equal to neither `"\r"` nor `"\n"`. Bytes that are not UTF-8 become U+FFFD.
public struct OutsideText: Sendable, Hashable, CustomStringConvertible {
    /// The safe text: one line of printable scalars.
    public let text: String

    /// The usual bound of a sentence that quotes a server or an app.
    public static let defaultLimit = 300

    /// `raw` made safe: see the type's guarantees.
    public init(_ raw: some StringProtocol, limit: Int = OutsideText.defaultLimit) {
        text = Self.cleaned(raw.unicodeScalars, limit: limit)
    }

    /// `bytes` decoded as UTF-8 (anything else becomes U+FFFD) and made safe.
    public init(bytes: some Collection<UInt8>, limit: Int = OutsideText.defaultLimit) {
        self.init(String(decoding: bytes, as: UTF8.self), limit: limit)
    }

    public var description: String { text }

    /// Whether `scalar` is one `text` never holds.
    public static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// `text` of several lines for a terminal: its LFs kept, each line made safe as
    /// ``OutsideText`` makes one (no length bound).
    public static func keepingLines(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 != "\n" && isRefused($0) }) else { return text }
        return text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
            .map { cleaned($0, limit: .max) }.joined(separator: "\n")
    }

    static func isBreak(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029: return true
        default: return false
        }
    }

    static func cleaned(_ scalars: some Sequence<Unicode.Scalar>, limit: Int) -> String {
        var out = String.UnicodeScalarView()
        var count = 0
        var lastWasBreak = false
        for scalar in scalars {
            if count >= limit {
                out.append(contentsOf: "...".unicodeScalars)
                break
            }
            if isBreak(scalar) {
                if !lastWasBreak { out.append(" ") }
                lastWasBreak = true
                count += 1
                continue
            }
            lastWasBreak = false
            if isRefused(scalar) {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out.append(contentsOf: ("\\u{" + (hex.count < 2 ? "0" + hex : hex) + "}").unicodeScalars)
            } else {
                out.append(scalar)
            }
            count += 1
        }
        return String(out)
    }
}
