#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem
import SwitchbackFiles

/// One history event as a hook receives it: a JSON object, the same bytes on a command's
/// stdin and in a webhook's body (docs/hooks.md):
///
///     {"v":1,"id":"4f0c…","kind":"switch","time":"2026-11-28T22:51:07Z","time_unix":1795906267,
///      "app_id":"dev.switchback.sample","install":"83aae71a…","from":"current","to":"previous",
///      "version":"1.2.0","source":"cli","reason":"notes corrupted","host":"web-3"}
///
/// `id` is 32 random hex digits, also the journald entry's `SWITCHBACK_EVENT_ID`, so a
/// receiver joins the two; `time_unix` is the history line's time.
public struct HookEvent: Sendable, Equatable {
    public var id: String
    public var event: SwitchHistoryEvent
    public var appID: String
    public var install: String
    /// The version of the slot the event names as `to`.
    public var version: String
    public var host: String

    public init(id: String, event: SwitchHistoryEvent, appID: String, install: String, version: String, host: String) {
        self.id = id
        self.event = event
        self.appID = appID
        self.install = install
        self.version = version
        self.host = host
    }

    /// A new event id: 32 lowercase hex digits from the kernel's random source.
    public static func newID() -> String {
        (0..<2).map { _ in
            let value = switchback_random64()
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.utf8.count) + hex
        }.joined()
    }

    /// The JSON object, one line, keys in the documented order.
    public var json: String {
        var fields: [(String, String)] = [
            ("v", "1"),
            ("id", Self.quoted(id)),
            ("kind", Self.quoted(event.kind.rawValue)),
            ("time", Self.quoted(formatRFC3339(event.time))),
            ("time_unix", String(event.time)),
            ("app_id", Self.quoted(appID)),
            ("install", Self.quoted(install)),
            ("from", Self.quoted(event.from.rawValue)),
            ("to", Self.quoted(event.to.rawValue)),
            ("version", Self.quoted(version)),
            ("source", Self.quoted(event.source.rawValue)),
        ]
        fields.append(("reason", Self.quoted(event.reason ?? "")))
        fields.append(("host", Self.quoted(host)))
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// `text` as a JSON string (`JSONString`).
    public static func quoted(_ text: String) -> String { JSONString.quoted(text) }

    /// This host's name (`gethostname`), "" when it cannot be read.
    public static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
        return OutsideText(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), limit: 255).text
    }
}
