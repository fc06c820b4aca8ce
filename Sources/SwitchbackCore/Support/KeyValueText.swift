#if canImport(Glibc)
import Glibc
#endif

/// The line format of Switchback's small files (manifest, state): `key=value` lines, `#`
/// comments, values escaped so that one value is always one line. It needs no Foundation,
/// so the launcher can read it in microseconds, and a shell script can write it.
public struct KeyValueText: Sendable, Equatable {
    /// The pairs whose key starts with `prefix` (`analysis.`, `hooks.`), the first of a key
    /// counting, as every lookup does.
    public func settings(withPrefix prefix: String) -> [String: String] {
        var settings: [String: String] = [:]
        for index in 0..<count {
            let key = self.key(at: index)
            if key.hasPrefix(prefix), settings[key] == nil { settings[key] = value(at: index) }
        }
        return settings
    }

    /// The text: a parsed file's bytes as read (comments and all), then a `key=value` line
    /// per appended pair, its value escaped. Keys and values are made into Strings only when
    /// asked for: the launcher parses the manifest, the state and the health file at every
    /// start and reads a few of their values.
    private var bytes: [UInt8]
    /// Three offsets into `bytes` per pair, in file order: where its key starts, its `=`, and
    /// where its value ends. One array of Int, not an array of structs or tuples: a generic
    /// type's runtime metadata costs more than the parse of a small file.
    private var marks: [Int]

    public init() {
        bytes = []
        marks = []
    }

    public static func == (lhs: KeyValueText, rhs: KeyValueText) -> Bool {
        lhs.keys == rhs.keys && lhs.values == rhs.values
    }

    /// How many pairs there are.
    public var count: Int { marks.count / 3 }

    /// The keys, in file order.
    public var keys: [String] { (0..<count).map { key(at: $0) } }

    /// The values, in file order, unescaped.
    public var values: [String] { (0..<count).map { value(at: $0) } }

    /// The key of pair `index`.
    public func key(at index: Int) -> String {
        withKeyBytes(at: index) { String(decoding: $0, as: UTF8.self) }
    }

    /// The value of pair `index`, unescaped.
    public func value(at index: Int) -> String {
        bytes.withUnsafeBufferPointer { all in
            let raw = UnsafeBufferPointer(rebasing: all[(marks[3 * index + 1] + 1)..<marks[3 * index + 2]])
            let text = String(decoding: raw, as: UTF8.self)
            return raw.contains(0x5C) ? Self.unescape(text) : text
        }
    }

    /// Calls `body` with the bytes of pair `index`'s key.
    public func withKeyBytes<R>(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try bytes.withUnsafeBufferPointer { all in
            try body(UnsafeBufferPointer(rebasing: all[marks[3 * index]..<marks[3 * index + 1]]))
        }
    }

    /// Whether pair `index`'s key is `name`.
    public func key(at index: Int, is name: StaticString) -> Bool {
        withKeyBytes(at: index) { matches($0, name) }
    }

    /// The index of the first pair whose key is `key` (among the pairs `within`, if given).
    public func index(of key: String, in within: Range<Int>? = nil) -> Int? {
        let pairs = within ?? 0..<count
        var key = key
        return key.withUTF8 { wanted -> Int? in
            guard wanted.count > 0 else { return nil }  // no key is empty
            return bytes.withUnsafeBufferPointer { all -> Int? in
                for index in pairs {
                    let start = marks[3 * index], length = marks[3 * index + 1] - start
                    if length == wanted.count, memcmp(all.baseAddress! + start, wanted.baseAddress!, length) == 0 { return index }
                }
                return nil
            }
        }
    }

    /// The value of the first `key`, if any.
    public subscript(key: String) -> String? {
        index(of: key).map { value(at: $0) }
    }

    /// Appends a pair.
    public mutating func append(_ key: String, _ value: String) {
        marks.append(bytes.count)
        bytes.append(contentsOf: key.utf8)
        marks.append(bytes.count)
        bytes.append(0x3D)
        bytes.append(contentsOf: Self.escape(value).utf8)
        marks.append(bytes.count)
        bytes.append(0x0A)
    }

    /// Parses `bytes`. Throws `.stateInvalid` naming the first bad line: not UTF-8, a line
    /// without `=`, or an empty key. One pass over the bytes, no String made: values are
    /// decoded when they are read.
    public static func parse(_ bytes: [UInt8], describing what: @autoclosure () -> String) throws(SwitchbackError) -> KeyValueText {
        // ASCII, the usual case, is valid UTF-8: one pass over the bytes, no String made.
        let ascii = bytes.withUnsafeBufferPointer { all in all.allSatisfy { $0 < 0x80 } }
        guard ascii || String(validating: bytes, as: UTF8.self) != nil else {
            throw SwitchbackError(.stateInvalid, "\(what()) is not UTF-8 text.")
        }
        var result = KeyValueText()
        result.bytes = bytes
        result.marks.reserveCapacity(96)
        var lineNumber = 0
        try bytes.withUnsafeBufferPointer { (all) throws(SwitchbackError) in
            var start = 0
            while start <= all.count {
                var end = start
                while end < all.count, all[end] != 0x0A { end += 1 }
                lineNumber += 1
                defer { start = end + 1 }
                guard start < end, all[start] != 0x23 else { continue }  // empty or "#"
                var equals = start
                while equals < end, all[equals] != 0x3D { equals += 1 }
                guard equals < end, equals != start else {
                    throw SwitchbackError(.stateInvalid, "\(what()) has a malformed line \(lineNumber).")
                }
                result.marks.append(start)
                result.marks.append(equals)
                result.marks.append(end)
            }
        }
        return result
    }

    /// The file's bytes, one `key=value` line per pair.
    public func serialized() -> [UInt8] {
        var text = ""
        for index in 0..<count { text += key(at: index) + "=" + Self.escape(value(at: index)) + "\n" }
        return Array(text.utf8)
    }

    /// Escapes backslash, newline, tab and carriage return.
    public static func escape<S: StringProtocol>(_ value: S) -> String {
        // Scalars, not Characters: "\r\n" is one Character, which no case below matches.
        var out = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out.append(contentsOf: "\\\\".unicodeScalars)
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            case "\t": out.append(contentsOf: "\\t".unicodeScalars)
            case "\r": out.append(contentsOf: "\\r".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    /// Undoes `escape`.
    public static func unescape<S: StringProtocol>(_ value: S) -> String {
        var out = String.UnicodeScalarView()
        var escaping = false
        for scalar in value.unicodeScalars {
            if escaping {
                switch scalar {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                default: out.append(scalar)
                }
                escaping = false
            } else if scalar == "\\" {
                escaping = true
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}

/// Whether `bytes` are `name`'s, lengths first: the byte-level lookups of the start path
/// (keys, manifest fields) compare against literals without making a String.
func matches(_ bytes: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
    bytes.count == name.utf8CodeUnitCount && (bytes.isEmpty || memcmp(bytes.baseAddress!, name.utf8Start, bytes.count) == 0)
}
