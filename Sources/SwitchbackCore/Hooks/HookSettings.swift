import SwitchbackFiles

/// The operator's hooks (`hooks.*` in the manifest; docs/hooks.md): a command run with each
/// history event as JSON on its stdin, and/or a URL the event is POSTed to, signed with an
/// HMAC-SHA256 key kept in a file of its own. Delivered by `rollbackctl-remote deliver-hooks`,
/// a detached process, from a queue in the state directory: never by the process that
/// switches (`HookQueue`).
public struct HookSettings: Sendable, Equatable {
    /// The program run for each event (`hooks.command`): an absolute path, no arguments.
    public var command: String?
    /// The URL each event is POSTed to (`hooks.url`), http:// or https://.
    public var url: String?
    /// The file whose bytes are the HMAC key of the webhook's signature (`hooks.secret_file`):
    /// an absolute path; required with `hooks.url`.
    public var secretFile: String?
    /// How long one delivery may take (`hooks.timeout_ms`, default 5000, 100–60000): a
    /// command still running is killed, a request abandoned.
    public var timeoutMilliseconds: Int
    /// How many times a failed delivery is tried again (`hooks.retries`, default 3, 0–10),
    /// after 1 s, 2 s, 4 s ... (at most 30 s).
    public var retries: Int
    /// Whether plain http to a host other than loopback is allowed (`hooks.allow_insecure_http`).
    public var allowsInsecureHTTP: Bool

    public init(command: String? = nil, url: String? = nil, secretFile: String? = nil, timeoutMilliseconds: Int = 5000,
                retries: Int = 3, allowsInsecureHTTP: Bool = false) {
        self.command = command
        self.url = url
        self.secretFile = secretFile
        self.timeoutMilliseconds = timeoutMilliseconds
        self.retries = retries
        self.allowsInsecureHTTP = allowsInsecureHTTP
    }

    /// Every `hooks.*` key.
    public static let keys = ["hooks.command", "hooks.url", "hooks.secret_file", "hooks.timeout_ms", "hooks.retries",
                              "hooks.allow_insecure_http"]

    /// Whether `settings` configure a hook at all: two lookups on every event path.
    public static func areConfigured(_ settings: KeyValueText) -> Bool {
        !(settings["hooks.command"] ?? "").isEmpty || !(settings["hooks.url"] ?? "").isEmpty
    }

    static func areConfigured(_ settings: [String: String]) -> Bool {
        !(settings["hooks.command"] ?? "").isEmpty || !(settings["hooks.url"] ?? "").isEmpty
    }

    /// The `hooks.*` pairs of `text`, for `parse`.
    public static func settings(in text: KeyValueText) -> [String: String] { text.settings(withPrefix: "hooks.") }

    /// The hooks `settings` configure; nil when none. Throws `.manifestInvalid` with one
    /// sentence naming the key for an unknown `hooks.` key or a value out of range; an empty
    /// value is an absent key. The bundler, `rollbackctl verify` and the deliverer all read
    /// them here.
    public static func parse(_ settings: [String: String]) throws(SwitchbackError) -> HookSettings? {
        func refuse(_ key: String, _ sentence: String) -> SwitchbackError {
            SwitchbackError(.manifestInvalid, "\(key) \(sentence)")
        }
        for key in settings.keys.sorted() where key.hasPrefix("hooks.") && !keys.contains(key) {
            throw refuse(key, "is not a hook setting; write \(keys.joined(separator: ", ")).")
        }
        let given = settings.filter { $0.key.hasPrefix("hooks.") && !$0.value.isEmpty }
        guard areConfigured(given) else {
            if let key = given.keys.sorted().first {
                throw refuse(key, "is set, but neither hooks.command nor hooks.url is; name the program or the URL the events go to.")
            }
            return nil
        }
        var hooks = HookSettings()
        if let command = given["hooks.command"] {
            guard command.hasPrefix("/"), !command.contains("\0"), command.utf8.count <= 4096 else {
                throw refuse("hooks.command", "is '\(OutsideText(command, limit: 80).text)'; write the absolute path of a program (it gets each event as JSON on its stdin, with no arguments).")
            }
            hooks.command = command
        }
        if let url = given["hooks.url"] {
            let rest = url.hasPrefix("http://") ? url.dropFirst(7) : url.hasPrefix("https://") ? url.dropFirst(8) : nil
            guard let rest, !(rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? "").isEmpty,
                  url.utf8.count <= 2048, url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw refuse("hooks.url", "is '\(OutsideText(url, limit: 80).text)'; write an http:// or https:// URL without spaces, e.g. https://hooks.example.com/switchback.")
            }
            hooks.url = url
            switch given["hooks.allow_insecure_http"] {
            case nil, "false": hooks.allowsInsecureHTTP = false
            case "true": hooks.allowsInsecureHTTP = true
            case let text?: throw refuse("hooks.allow_insecure_http", "is '\(OutsideText(text, limit: 40).text)'; write true or false.")
            }
            if NetworkHost.isInsecureRemote(url: url), !hooks.allowsInsecureHTTP {
                throw refuse("hooks.url", "is \(url.prefix(80)), plain http to a host other than loopback, where anything on the path could read the events; use https, or set hooks.allow_insecure_http=true to accept that.")
            }
            guard let secret = given["hooks.secret_file"] else {
                throw refuse("hooks.url", "is set without hooks.secret_file; name the file holding the key the events are signed with (HMAC-SHA256), so that the receiver can tell them from forgeries.")
            }
            guard secret.hasPrefix("/"), !secret.contains("\0") else {
                throw refuse("hooks.secret_file", "is '\(OutsideText(secret, limit: 80).text)'; write the absolute path of the file holding the key.")
            }
            hooks.secretFile = secret
        } else if given["hooks.secret_file"] != nil {
            throw refuse("hooks.secret_file", "is set without hooks.url; the key signs webhooks only (a command hook runs on this host).")
        }
        func number(_ key: String, _ range: ClosedRange<Int>, _ fallback: Int) throws(SwitchbackError) -> Int {
            guard let text = given[key] else { return fallback }
            guard let value = Int(text), range.contains(value) else {
                throw refuse(key, "is '\(OutsideText(text, limit: 40).text)'; write a whole number from \(range.lowerBound) to \(range.upperBound).")
            }
            return value
        }
        hooks.timeoutMilliseconds = try number("hooks.timeout_ms", 100...60_000, 5000)
        hooks.retries = try number("hooks.retries", 0...10, 3)
        return hooks
    }

    /// The wait before try `attempt` (1 for the first retry): 1 s, 2 s, 4 s ... at most 30 s.
    public static func backoffMilliseconds(attempt: Int) -> Int {
        min(30_000, 1000 << min(max(0, attempt - 1), 5))
    }
}
