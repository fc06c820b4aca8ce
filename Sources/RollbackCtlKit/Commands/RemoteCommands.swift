/// The subcommands rollbackctl-remote runs (`sync`, `keygen`, `sign`): declared here, beside
/// the others, so that rollbackctl parses them, prints their help and reports their usage
/// errors without linking networking or libcrypto; RemoteCtlKit's commands take these
/// configurations as theirs and add the run.
extension CommandConfiguration {
    package static let sync = CommandConfiguration(
        name: "sync",
        abstract: "Fetch the signed remote directive now, verify it and apply it.",
        overview: """
            Fetch the signed remote directive, verify it (signature by a trusted key, app
            id, serial above the last accepted one, expiry, current version, rollout) and apply
            it. The outcome is kept in the state directory and shown by 'rollbackctl status'.
            Anything but an applied directive leaves the decision as it is.
            """,
        options: [
            .init("--url", .value("URL"), help: "Fetch this URL instead of the manifest's remote.url."),
            .init("--deadline-ms", .value("N"), help: """
                One deadline for the whole fetch (default: the manifest's
                remote.deadline_ms, else 5000).
                """),
            .init("--background", help: """
                Print nothing, and exit at once if another sync is running
                (how the launcher starts it).
                """),
            .init("--window-end", .value("MS"), help: """
                This is a first check, made in a window that ends at MS
                (milliseconds since the epoch): after a success the next check
                is drawn from the window's end (how the launcher starts it).
                """),
        ],
        sections: [("EXIT STATUS", "0 applied, unchanged or not applicable; 1 refused, unreachable or not configured.")],
        isRemote: true)

    package static let keygen = CommandConfiguration(
        name: "keygen",
        abstract: "Make an Ed25519 key pair for signing remote directives.",
        overview: """
            Make an Ed25519 key pair: DIR/directive.key (private, mode 0600; keep it off
            the servers) and DIR/directive.pub (give it to scripts/bundle --trust-key). Never
            overwrites existing keys.
            """,
        options: [.init("--out", .value("DIR"), required: true, help: "The directory to write (created with mode 0700 if missing).")],
        isRemote: true)

    package static let sign = CommandConfiguration(
        name: "sign",
        abstract: "Write a signed remote directive (roll back or roll forward).",
        overview: """
            Write a signed directive for installs to fetch: run the previous slot (roll
            back) or the current one (roll forward) on installs whose current slot runs one of
            the given versions.
            """,
        options: [
            .init("--key", .repeated("FILE"), required: true, help: "A private key from keygen; repeat to sign with several keys."),
            .init("--decision", .value("WHICH"), help: "previous (roll back) or current (roll forward)."),
            .init("--applies-to", .repeated("VER"), help: "A current-slot version the directive is for; repeatable."),
            .init("--reason", .value("TEXT"), help: "Shown by 'rollbackctl status' on every install and recorded."),
            .init("--serial", .value("N"), help: "Must go up with every directive (default: the time in seconds)."),
            .init("--expires-in", .value("TIME"), help: "How long installs may act on it: 90s, 30m, 12h, 7d (default 7d)."),
            .init("--expires-at", .value("TIME"), help: "Or an RFC 3339 time (2026-05-08T12:00:00Z)."),
            .init("--issued-at", .value("TIME"), help: "RFC 3339 (default: now)."),
            .init("--rollout-percent", .value("N"), help: "Only installs whose bucket is below N (0-100) apply it."),
            .init("--app-id", .value("ID"), help: "The app (default: the bundle's app id)."),
            .init("--out", .value("FILE"), help: "Where to write it (default: stdout; with --renew, FILE itself)."),
            .init("--renew", .value("FILE"), help: """
                Re-sign FILE's directive as it is, with a new serial (the time
                in seconds, or one more), issued now, expiring in --expires-in
                (default 1d): run it from cron so installs can tell a live
                publisher from a frozen mirror. Only a file these keys signed.
                """),
        ],
        usage: [
            "sign --key FILE --decision previous|current --applies-to VERSION --reason TEXT [options]",
            "sign --renew FILE --key FILE [--expires-in TIME] [--serial N] [--out FILE]",
        ],
        isRemote: true)
}
