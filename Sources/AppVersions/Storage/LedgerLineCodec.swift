#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Converts ledger records to and from single lines of tab-separated text.
///
/// Fields are escaped so a value never contains a tab or newline (`\\`, `\t`, `\n`,
/// `\r`); an absent optional is written `\-`, which no escaped value can be. Dates are
/// seconds since 2001-01-01 in Swift's shortest round-trip form, so they read back
/// exactly. Readers ignore trailing fields they do not know, so later releases can add
/// fields to a kind without breaking earlier ones, and keep lines of unknown kinds.
enum LedgerLineCodec {
    struct Problem: Error {
        let message: String
    }

    static let absent = "\\-"

    // MARK: Encoding

    static func encode(_ record: LedgerRecord) -> String {
        switch record {
        case .history(let event):
            return join([
                "history", date(event.date), event.kind.rawValue,
                event.running.version.description, escape(event.running.build),
                optional(event.slot),
                optional(event.system?.id), optional(event.system?.versionID), optional(event.system?.prettyName),
            ])
        case .system(let event):
            return join([
                "system", date(event.date), escape(event.system.id),
                escape(event.system.versionID), escape(event.system.prettyName),
            ])
        case .stepBegan(let name, let running, let when):
            return join(["began", date(when), escape(name), running.version.description, escape(running.build)])
        case .stepEnded(let name, let running, let when, let outcome):
            let (word, message): (String, String?) = switch outcome {
            case .succeeded: ("ok", nil)
            case .failed(let text): ("failed", text)
            case .abandoned(let text): ("abandoned", text)
            }
            return join([
                "ended", date(when), escape(name), running.version.description, escape(running.build),
                word, optional(message),
            ])
        case .initialized(let floor, let isBaseline, let when):
            return join(["initialized", date(when), floor.description, isBaseline ? "baseline" : "install"])
        case .migrated(let running, let when):
            return join(["migrated", date(when), running.version.description, escape(running.build)])
        case .reset(let when):
            return join(["reset", date(when)])
        case .snapshot(let name, let path, let when):
            return join(["snapshot", date(when), escape(name), escape(path)])
        case .undoBegan(let name, let method, let archive, let when):
            return join(["undo-began", date(when), escape(name), method.rawValue, optional(archive)])
        case .undone(let name, let method, let archive, let when):
            return join(["undone", date(when), escape(name), method.rawValue, optional(archive)])
        case .undoFailed(let name, let method, let when):
            return join(["undo-failed", date(when), escape(name), method.rawValue, optional(nil)])
        case .unknown(let line):
            return line
        }
    }

    static func join(_ fields: [String]) -> String {
        fields.joined(separator: "\t")
    }

    static func date(_ date: Date) -> String {
        date.timeIntervalSinceReferenceDate.description
    }

    static func optional(_ value: String?) -> String {
        value.map(escape) ?? absent
    }

    static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 92 || $0 == 9 || $0 == 10 || $0 == 13 }) else { return value }
        var result = ""
        result.reserveCapacity(value.utf8.count + 4)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\t": result += "\\t"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    // MARK: Decoding

    /// Decodes one line (without its newline).
    static func decode(_ line: UnsafeBufferPointer<UInt8>) throws(Problem) -> LedgerRecord {
        var reader = FieldReader(line: line)
        let kind = reader.nextField()
        if kind.isEmpty {
            throw Problem(message: line.isEmpty ? "the line is empty" : "the entry kind is missing")
        }
        switch String(decoding: kind, as: UTF8.self) {
        case "history":
            let when = try reader.date()
            let kindText = try reader.string("event kind")
            guard let eventKind = HistoryEvent.Kind(rawValue: kindText) else {
                throw Problem(message: "unknown history event kind \"\(kindText)\"")
            }
            let running = try reader.running()
            let slot = try reader.optionalString("slot")
            let systemID = try reader.optionalString("system id")
            let systemVersion = try reader.optionalString("system version")
            let systemName = try reader.optionalString("system name")
            var system: SystemVersion? = nil
            if let systemID {
                system = SystemVersion(id: systemID, versionID: systemVersion ?? "", prettyName: systemName ?? "")
            }
            return .history(HistoryEvent(kind: eventKind, running: running, date: when, slot: slot, system: system))
        case "system":
            let when = try reader.date()
            let system = SystemVersion(
                id: try reader.string("system id"),
                versionID: try reader.string("system version"),
                prettyName: try reader.string("system name")
            )
            return .system(SystemEvent(date: when, system: system))
        case "began":
            let when = try reader.date()
            let name = try reader.string("step name")
            return .stepBegan(name: name, running: try reader.running(), date: when)
        case "ended":
            let when = try reader.date()
            let name = try reader.string("step name")
            let running = try reader.running()
            let word = try reader.string("outcome")
            let message = try reader.optionalString("message") ?? ""
            let outcome: StepOutcome
            switch word {
            case "ok": outcome = .succeeded
            case "failed": outcome = .failed(message)
            case "abandoned": outcome = .abandoned(message)
            default: throw Problem(message: "unknown step outcome \"\(word)\"")
            }
            return .stepEnded(name: name, running: running, date: when, outcome: outcome)
        case "initialized":
            let when = try reader.date()
            let floor = try reader.version()
            let how = try reader.string("initialisation kind")
            guard how == "baseline" || how == "install" else {
                throw Problem(message: "unknown initialisation kind \"\(how)\"")
            }
            return .initialized(floor: floor, isBaseline: how == "baseline", date: when)
        case "migrated":
            let when = try reader.date()
            return .migrated(try reader.running(), date: when)
        case "reset":
            return .reset(date: try reader.date())
        case "snapshot":
            let when = try reader.date()
            let name = try reader.string("step name")
            return .snapshot(name: name, path: try reader.string("snapshot path"), date: when)
        case "undo-began", "undone", "undo-failed":
            let when = try reader.date()
            let name = try reader.string("step name")
            let word = try reader.string("undo method")
            guard let method = UndoMethod(rawValue: word) else {
                throw Problem(message: "unknown undo method \"\(word)\"")
            }
            let archive = try reader.optionalString("archive path")
            switch String(decoding: kind, as: UTF8.self) {
            case "undone": return .undone(name: name, method: method, archive: archive, date: when)
            case "undo-failed": return .undoFailed(name: name, method: method, date: when)
            default: return .undoBegan(name: name, method: method, archive: archive, date: when)
            }
        default:
            guard let first = kind.first, first >= 97 && first <= 122 else {
                throw Problem(message: "it does not start with an entry kind")
            }
            return .unknown(String(decoding: line, as: UTF8.self))
        }
    }

    /// Walks the tab-separated fields of one line without allocating.
    struct FieldReader {
        let line: UnsafeBufferPointer<UInt8>
        var position = 0
        var isAtEnd = false

        init(line: UnsafeBufferPointer<UInt8>) {
            self.line = line
        }

        /// The next field, or an empty one past the end (check ``isAtEnd`` first).
        mutating func nextField() -> UnsafeBufferPointer<UInt8> {
            let start = position
            var end = start
            while end < line.count && line[end] != 9 { end += 1 }
            if end >= line.count { isAtEnd = true }
            position = end + 1
            return UnsafeBufferPointer(rebasing: line[start..<end])
        }

        mutating func next(_ what: String) throws(Problem) -> UnsafeBufferPointer<UInt8> {
            guard !isAtEnd else { throw Problem(message: "the \(what) field is missing") }
            return nextField()
        }

        mutating func string(_ what: String) throws(Problem) -> String {
            let field = try next(what)
            guard field.contains(92) else { return String(decoding: field, as: UTF8.self) }
            return try LedgerLineCodec.unescape(field, what: what)
        }

        mutating func optionalString(_ what: String) throws(Problem) -> String? {
            let field = try next(what)
            if field.count == 2 && field[0] == 92 && field[1] == 45 { return nil }
            guard field.contains(92) else { return String(decoding: field, as: UTF8.self) }
            return try LedgerLineCodec.unescape(field, what: what)
        }

        mutating func date() throws(Problem) -> Date {
            let field = try next("date")
            guard let seconds = LedgerLineCodec.parseDouble(field) else {
                throw Problem(message: "the date \"\(String(decoding: field, as: UTF8.self))\" is not a number")
            }
            guard LedgerLineCodec.dateRange.contains(seconds) else {
                throw Problem(message: "the date \(seconds) is outside years 0001...9999")
            }
            return Date(timeIntervalSinceReferenceDate: seconds)
        }

        mutating func version() throws(Problem) -> Version {
            let field = try next("version")
            if let version = Version.parsePlainRelease(field) { return version }
            let text = String(decoding: field, as: UTF8.self)
            do {
                return try Version(parsing: text)
            } catch {
                throw Problem(message: "the version \"\(text)\" is not valid SemVer")
            }
        }

        mutating func running() throws(Problem) -> RunningVersion {
            let version = try version()
            return RunningVersion(version: version, build: try string("build"))
        }
    }

    /// Parses a decimal floating-point field without allocating; nil unless the whole field is a finite number.
    ///
    /// Plain `digits.digits` whose digits make an integer below 2^53 takes Clinger's fast
    /// path (an exact integer divided by an exact power of ten is correctly rounded);
    /// anything else goes to `strtod`.
    static func parseDouble(_ field: UnsafeBufferPointer<UInt8>) -> Double? {
        guard !field.isEmpty, field.count < 64 else { return nil }
        var mantissa: UInt64 = 0
        var digits = 0
        var fractionDigits = 0
        var seenPoint = false
        var isPlain = true
        for byte in field {
            if byte >= 48 && byte <= 57 {
                if digits > 0 || byte != 48 { digits += 1 }
                mantissa = mantissa &* 10 &+ UInt64(byte - 48)
                if seenPoint { fractionDigits += 1 }
            } else if byte == 46 && !seenPoint {
                seenPoint = true
            } else {
                isPlain = false
                break
            }
        }
        let isExactInteger = digits <= 15 || (digits == 16 && mantissa <= 1 << 53)
        if isPlain && isExactInteger && fractionDigits <= 22 && field.first != 46 && field.last != 46 {
            return Double(mantissa) / powersOfTen[fractionDigits]
        }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: field.count + 1) { buffer -> Double? in
            for index in 0..<field.count { buffer[index] = CChar(bitPattern: field[index]) }
            buffer[field.count] = 0
            var end: UnsafeMutablePointer<CChar>? = nil
            let value = strtod(buffer.baseAddress!, &end)
            guard let end, end == buffer.baseAddress! + field.count, value.isFinite else { return nil }
            return value
        }
    }

    /// Dates in seconds since 2001-01-01: years 0001 (`Date.distantPast`) through 9999, so a
    /// date converted to whole seconds or milliseconds never overflows.
    static let dateRange: ClosedRange<Double> = -63_114_076_800...253_402_300_799 - 978_307_200

    static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    static func unescape(_ field: UnsafeBufferPointer<UInt8>, what: String) throws(Problem) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(field.count)
        var iterator = field.makeIterator()
        while let byte = iterator.next() {
            guard byte == 92 else {
                bytes.append(byte)
                continue
            }
            switch iterator.next() {
            case 92: bytes.append(92)
            case 116: bytes.append(9)
            case 110: bytes.append(10)
            case 114: bytes.append(13)
            default: throw Problem(message: "the \(what) field has an invalid escape")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
