/// The remote directive's settings, from the manifest (written by scripts/bundle):
///
///     remote.url=https://updates.example.com/notes/directive.json
///     remote.keys=MCowBQYDK2VwAyEA...=,MCowBQYDK2VwAyEA...=
///     remote.interval_s=3600
///
/// Keys are the base64 body of each `directive.pub` (the single line between the PEM
/// armour lines: the DER SubjectPublicKeyInfo), comma-separated, so one manifest line holds
/// several keys and `openssl` reads them back with the armour added.
public struct RemoteSettings: Sendable, Equatable {
    /// Where the signed directive is served (`remote.url`); nil means no remote directive.
    public var url: String?
    /// `remote.keys` as the manifest has it: read into `keys` only by the program that checks
    /// a directive's signature. The launcher builds these settings at every start of an app
    /// with a directive URL, and splitting the keys by Character cost it 100,000 instructions.
    public var keysText: String
    /// The trusted public keys (`remote.keys`), base64 DER SubjectPublicKeyInfo each.
    public var keys: [String] {
        keysText.split(separator: ",").map { String($0.filter { !$0.isWhitespace }) }.filter { !$0.isEmpty }
    }
    /// The most time between two checks of a running install (`remote.interval_s`, default
    /// 3600): after a successful check the next is due `interval × uniform(0.75, 1.0)` later.
    public var intervalSeconds: Int64
    /// How long an install may go without verifying a directive before status, metrics and the
    /// history call it stale (`remote.max_staleness_s`, default 86400). The decision stays.
    public var maxStalenessSeconds: Int64
    /// The shortest wait before a failed check is retried (`remote.retry_floor_s`, default 30);
    /// the backoff doubles from there, with jitter, up to the interval.
    public var retryFloorSeconds: Int64
    /// How overdue a check must be for the start to treat it as a first one (the install was
    /// down), and the cap of the first check's window (`remote.splay_s`, default the interval;
    /// docs/remote.md, "Scheduling"). 0 turns the first check's wait off; the due times keep
    /// their own jitter.
    public var splaySeconds: Int64
    /// The longest random wait before a first check, or one overdue by more than the splay
    /// (`remote.first_check_s`, default 30, capped by the splay): a new or restarted install
    /// asks within this window, and its next check is drawn from the schedule's steady phase
    /// from the window's end on (`RemoteSchedule.firstCheckWindow`).
    public var firstCheckSeconds: Int64
    /// The whole sync's deadline (`remote.deadline_ms`, default 5000).
    public var deadlineMilliseconds: Int
    /// Whether plain http to a non-loopback host is allowed (`remote.allow_insecure_http`).
    public var allowsInsecureHTTP: Bool
    /// Whether the launcher checks before every start and waits for the answer
    /// (`remote.check_before_start`, default false).
    public var checksBeforeStart: Bool
    /// That check's deadline (`remote.before_start_deadline_ms`, default 1000).
    public var beforeStartDeadlineMilliseconds: Int

    public init(manifest: Manifest) {
        let url = manifest.settings["remote.url"] ?? ""
        self.url = url.isEmpty ? nil : url
        keysText = manifest.settings["remote.keys"] ?? ""
        intervalSeconds = Int64(manifest.milliseconds("remote.interval_s", default: 3600))
        maxStalenessSeconds = Int64(max(1, manifest.milliseconds("remote.max_staleness_s", default: 86400)))
        retryFloorSeconds = Int64(max(1, manifest.milliseconds("remote.retry_floor_s", default: 30)))
        splaySeconds = Int64(manifest.milliseconds("remote.splay_s", default: Int(intervalSeconds)))
        firstCheckSeconds = Int64(manifest.milliseconds("remote.first_check_s", default: 30))
        deadlineMilliseconds = max(1, manifest.milliseconds("remote.deadline_ms", default: 5000))
        allowsInsecureHTTP = manifest.settings["remote.allow_insecure_http"] == "true"
        checksBeforeStart = manifest.settings["remote.check_before_start"] == "true"
        beforeStartDeadlineMilliseconds = max(1, manifest.milliseconds("remote.before_start_deadline_ms", default: 1000))
    }

    /// The local file the directive is read from, when `remote.url` is a `file://` URL
    /// (`file:///etc/app/directive.json`): no fetch, no schedule; a start reads it when it
    /// changed, the supervisor when inotify says its directory changed (docs/remote.md,
    /// "Directives from a file").
    public var filePath: String? { url.flatMap(DirectiveFile.path(ofURL:)) }

    /// The PEM text of each trusted key, as libcrypto reads it.
    public var keyPEMs: [String] {
        keys.map { body in
            var lines = ["-----BEGIN PUBLIC KEY-----"]
            var rest = Substring(body)
            while !rest.isEmpty {
                lines.append(String(rest.prefix(64)))
                rest = rest.dropFirst(64)
            }
            lines.append("-----END PUBLIC KEY-----")
            return lines.joined(separator: "\n") + "\n"
        }
    }
}

extension Manifest {
    /// The remote directive's settings (`remote.*`).
    public var remote: RemoteSettings { RemoteSettings(manifest: self) }
}
