/// A JSON string literal, written without Foundation: quotes, backslashes and the usual
/// escapes, and every scalar `OutsideText` refuses (C0, DEL, C1 controls, line separators,
/// bidi overrides) as `\uXXXX`, so no terminal that shows the JSON runs an escape sequence
/// from a file or a server. `status --json` and the hooks' events (`HookEvent`) use it.
public enum JSONString {
    /// Appends `string`, quoted, to `out`.
    public static func quote(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let control where OutsideText.isRefused(control):
                let hex = String(control.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.utf8.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// `string`, quoted.
    public static func quoted(_ string: String) -> String {
        var out = ""
        quote(string, to: &out)
        return out
    }
}
