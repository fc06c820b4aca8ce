import Foundation

/// Renders JSON for `--json` output: sorted keys, pretty-printed, `NSNull` for null.
enum JSON {
    static func render(_ value: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else {
            return "null"
        }
        return String(decoding: data, as: UTF8.self)
    }
}
