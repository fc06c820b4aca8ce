/// The line format of Switchback's small files (manifest, state): `key=value` lines, `#`
/// comments, values escaped so that one value is always one line. It needs no Foundation,
/// so the launcher can read it in microseconds, and a shell script can write it.
public struct KeyValueText: Sendable, Equatable {
    /// The keys and the values, in file order. Two arrays of String rather than one of
    /// pairs: the launcher parses these at every start, and an array of tuples is a generic
    /// type whose runtime metadata costs more than the parse of a small file.
    public private(set) var keys: [String]
    public private(set) var values: [String]

    public init() {
        keys = []
        values = []
    }

    public static func == (lhs: KeyValueText, rhs: KeyValueText) -> Bool {
        lhs.keys == rhs.keys && lhs.values == rhs.values
    }

    /// The value of the first `key`, if any.
    public subscript(key: String) -> String? {
        keys.firstIndex(of: key).map { values[$0] }
    }

    /// Appends a pair.
    public mutating func append(_ key: String, _ value: String) {
        keys.append(key)
        values.append(value)
    }

    /// Parses `bytes`. Throws `.stateInvalid` naming the first bad line: not UTF-8, a line
    /// without `=`, or an empty key. Works on bytes, not Characters: the launcher parses
    /// the manifest and the state at every start.
    public static func parse(_ bytes: [UInt8], describing what: @autoclosure () -> String) throws(SwitchbackError) -> KeyValueText {
        // One validation of the whole file, then lines cut from the bytes and decoded from
        // valid UTF-8 (the stdlib's fast path): the launcher parses the manifest and the state
        // at every start.
        // ASCII, the usual case, is valid UTF-8: one pass over the bytes, no String made.
        let ascii = bytes.withUnsafeBufferPointer { all in all.allSatisfy { $0 < 0x80 } }
        guard ascii || String(validating: bytes, as: UTF8.self) != nil else {
            throw SwitchbackError(.stateInvalid, "\(what()) is not UTF-8 text.")
        }
        var result = KeyValueText()
        result.keys.reserveCapacity(32)
        result.values.reserveCapacity(32)
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
                let key = String(decoding: UnsafeBufferPointer(rebasing: all[start..<equals]), as: UTF8.self)
                let valueBytes = UnsafeBufferPointer(rebasing: all[(equals + 1)..<end])
                let raw = String(decoding: valueBytes, as: UTF8.self)
                result.append(key, valueBytes.contains(0x5C) ? unescape(raw) : raw)
            }
        }
        return result
    }

    /// The file's bytes, one `key=value` line per pair.
    public func serialized() -> [UInt8] {
        var text = ""
        for (key, value) in zip(keys, values) { text += key + "=" + Self.escape(value) + "\n" }
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
