/// Renders JSON for `--json` output, without Foundation (linking it costs `rollbackctl` about
/// 3 ms at every start): objects with sorted keys, pretty-printed with two spaces, `/` not
/// escaped, `JSON.null` for null. Values are strings, Booleans, integers, doubles, arrays and
/// `[String: Any]` objects; anything else renders as its description, quoted.
enum JSON {
    /// JSON's null.
    struct Null: Sendable {}
    static let null = Null()

    static func render(_ value: Any) -> String {
        var out = ""
        write(value, indent: 0, to: &out)
        return out
    }

    private static func write(_ value: Any, indent: Int, to out: inout String) {
        let pad = String(repeating: " ", count: indent + 2), closing = String(repeating: " ", count: indent)
        switch value {
        case is Null: out += "null"
        case let bool as Bool: out += bool ? "true" : "false"
        case let int as Int: out += String(int)
        case let int as Int32: out += String(int)
        case let int as Int64: out += String(int)
        case let int as UInt32: out += String(int)
        case let int as UInt64: out += String(int)
        case let double as Double: out += double.isFinite ? String(double) : "null"
        case let string as String: quote(string, to: &out)
        case let array as [Any]:
            if array.isEmpty { out += "[]"; return }
            out += "[\n"
            for (index, element) in array.enumerated() {
                out += pad
                write(element, indent: indent + 2, to: &out)
                out += index == array.count - 1 ? "\n" : ",\n"
            }
            out += closing + "]"
        case let object as [String: Any]:
            if object.isEmpty { out += "{}"; return }
            out += "{\n"
            let keys = object.keys.sorted()
            for (index, key) in keys.enumerated() {
                out += pad
                quote(key, to: &out)
                out += " : "
                write(object[key]!, indent: indent + 2, to: &out)
                out += index == keys.count - 1 ? "\n" : ",\n"
            }
            out += closing + "}"
        default: quote(String(describing: value), to: &out)
        }
    }

    private static func quote(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
