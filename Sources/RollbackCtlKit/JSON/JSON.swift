import SwitchbackFiles
/// A JSON value, and how `--json` prints one without Foundation (linking it costs
/// `rollbackctl` about 3 ms at every start): objects with sorted keys, pretty-printed with
/// two spaces, `/` not escaped. `JSONWriter` turns any `Encodable` into one.
enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number, as it is printed.
    case number(String)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    /// The value printed, pretty and with sorted keys.
    var rendered: String {
        var out = ""
        write(indent: 0, to: &out)
        return out
    }

    private func write(indent: Int, to out: inout String) {
        let pad = String(repeating: " ", count: indent + 2), closing = String(repeating: " ", count: indent)
        switch self {
        case .null: out += "null"
        case .bool(let bool): out += bool ? "true" : "false"
        case .number(let text): out += text
        case .string(let string): Self.quote(string, to: &out)
        case .array(let array):
            if array.isEmpty { out += "[]"; return }
            out += "[\n"
            for (index, element) in array.enumerated() {
                out += pad
                element.write(indent: indent + 2, to: &out)
                out += index == array.count - 1 ? "\n" : ",\n"
            }
            out += closing + "]"
        case .object(let object):
            if object.isEmpty { out += "{}"; return }
            out += "{\n"
            let keys = object.keys.sorted()
            for (index, key) in keys.enumerated() {
                out += pad
                Self.quote(key, to: &out)
                out += " : "
                object[key]!.write(indent: indent + 2, to: &out)
                out += index == keys.count - 1 ? "\n" : ",\n"
            }
            out += closing + "}"
        }
    }

    private static func quote(_ string: String, to out: inout String) {
        JSONString.quote(string, to: &out)
    }
}
