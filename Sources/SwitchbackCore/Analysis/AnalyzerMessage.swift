import SwitchbackFiles

/// One record of the channel between the supervisor and its analyzer
/// (`rollbackctl-remote analyze`), both ways, and its framing.
///
/// A frame is `LENGTH SP PAYLOAD LF`: `LENGTH` the payload's UTF-8 bytes in decimal (1 to 5
/// digits, at most ``maximumPayloadBytes``), `PAYLOAD` words separated by one space whose
/// last is free text made safe by ``OutsideText`` (no control character, no line break). A
/// reader takes exactly `LENGTH` bytes and requires the LF after them, so text inside a
/// payload can never start a record, whatever it holds; a frame that does not read so is
/// malformed, and the reader refuses it and everything after it.
public enum AnalyzerMessage: Equatable, Sendable {
    /// Analyzer → supervisor: a check was measured.
    case measurement(check: String, phase: String, sentence: OutsideText)
    /// Analyzer → supervisor: the verdict (`successful`, `failed`, `inconclusive`).
    case verdict(word: String, sentence: OutsideText)
    /// Supervisor → analyzer: the app's cumulative failure count.
    case appFailures(Int)
    /// Supervisor → analyzer: the app said it is bad.
    case appBad(reason: OutsideText)

    /// The largest payload a frame carries.
    public static let maximumPayloadBytes = 16 << 10

    /// The payload: words, the free text last.
    public var payload: String {
        switch self {
        case .measurement(let check, let phase, let sentence): return "measurement \(Self.word(check)) \(Self.word(phase)) \(sentence.text)"
        case .verdict(let word, let sentence): return "verdict \(Self.word(word)) \(sentence.text)"
        case .appFailures(let count): return "app-failures \(count)"
        case .appBad(let reason): return "app-bad \(reason.text)"
        }
    }

    /// The whole frame, to be written with one `write(2)`.
    public var frame: [UInt8] {
        var payload = Array(self.payload.utf8)
        if payload.count > Self.maximumPayloadBytes { payload = Array(payload.prefix(Self.maximumPayloadBytes)) }
        return Array("\(payload.count) ".utf8) + payload + [0x0A]
    }

    /// The message a payload holds; nil for one of a kind this side does not know (ignored,
    /// as an older reader ignores a newer writer's records).
    public init?(payload: String) {
        let words = payload.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        switch words.first {
        case "measurement" where words.count >= 3:
            self = .measurement(check: String(words[1]), phase: String(words[2]), sentence: OutsideText(words.count > 3 ? words[3] : "", limit: Self.maximumPayloadBytes))
        case "verdict" where words.count >= 2:
            let rest = payload.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            self = .verdict(word: String(words[1]), sentence: OutsideText(rest.count > 2 ? rest[2] : "", limit: Self.maximumPayloadBytes))
        case "app-failures" where words.count == 2:
            guard let count = Int(words[1]), count >= 0 else { return nil }
            self = .appFailures(count)
        case "app-bad":
            let reason = payload.dropFirst("app-bad".count).drop { $0 == " " }
            self = .appBad(reason: OutsideText(reason.isEmpty ? "no reason given" : reason, limit: 512))
        default:
            return nil
        }
    }

    /// A word of the payload: no space, no control (a check name, a phase are already so).
    static func word(_ text: String) -> String {
        let safe = OutsideText(text, limit: 64).text.unicodeScalars.map { $0 == " " ? "_" : Character($0) }
        return safe.isEmpty ? "-" : String(safe)
    }
}

/// Reads frames of ``AnalyzerMessage`` out of a byte stream that arrives in pieces.
public struct AnalyzerFrameReader: Sendable {
    /// Why a frame was refused: one clause for the sentence the reader's owner says once.
    public struct Malformed: Error, Equatable, Sendable {
        public let clause: String
    }

    private var pending: [UInt8] = []
    private(set) public var isBroken = false

    public init() {}

    /// Adds bytes read.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        guard !isBroken else { return }
        pending.append(contentsOf: bytes)
    }

    /// The next whole frame's payload, nil when none is whole yet; throws for a malformed
    /// frame, after which the stream is broken: nothing more is read from it.
    public mutating func next() throws(Malformed) -> String? {
        guard !isBroken, !pending.isEmpty else { return nil }
        var digits = 0
        while digits < pending.count, pending[digits] >= 0x30, pending[digits] <= 0x39 { digits += 1 }
        if digits == pending.count {
            guard digits <= 5 else { throw broken("a frame's length has more than 5 digits") }
            return nil
        }
        guard digits >= 1, digits <= 5, pending[digits] == 0x20 else {
            throw broken("a frame does not start with its length and a space (it starts with '\(OutsideText(bytes: pending.prefix(24), limit: 24).text)')")
        }
        let length = pending[..<digits].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard length <= AnalyzerMessage.maximumPayloadBytes else {
            throw broken("a frame announces \(length) bytes, more than \(AnalyzerMessage.maximumPayloadBytes)")
        }
        let end = digits + 1 + length
        guard pending.count > end else { return nil }
        guard pending[end] == 0x0A else { throw broken("a frame of \(length) bytes is not followed by a line feed") }
        let payload = pending[(digits + 1)..<end]
        guard !payload.contains(0x0A), !payload.contains(0x0D) else { throw broken("a frame's payload holds a line break") }
        pending.removeSubrange(...end)
        return String(decoding: payload, as: UTF8.self)
    }

    private mutating func broken(_ clause: String) -> Malformed {
        isBroken = true
        pending = []
        return Malformed(clause: clause)
    }
}
