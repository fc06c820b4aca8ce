/// The help texts, in argument-parser's OVERVIEW / USAGE / OPTIONS shape.
enum Help {
    static let toolVersion = "rollbackctl (Switchback) 0.1.0"

    static let main = """
    OVERVIEW: See and switch which build of AppCore a Switchback bundle runs.

    USAGE: rollbackctl [--state-dir DIR] [--bundle DIR] <subcommand> [options]

    OPTIONS:
      --state-dir DIR     The state directory (default: $SWITCHBACK_STATE_DIR, else
                          $XDG_STATE_HOME/<app id>, else ~/.local/state/<app id>).
      --bundle DIR        The bundle (default: the directory above this executable's bin/).
      --version           Show the version.
      -h, --help          Show help information.

    SUBCOMMANDS:
      status              Which slot runs next and why; both slots' versions; the data.
      rollback            Convert the data back, then persist the flag: run the previous slot.
      rollforward         Clear the flag: run the current slot.
      history             Every switch and data conversion: when, from, to, source, reason.
      mark-good           Mark a slot's build good: its starts are no longer counted.
      mark-bad            Mark a slot's build bad: the other slot runs.
      verify              Check both slots against the manifest.
      inspect             Show the version, build and ABI stamp of an AppCore library.
      sync                Fetch the signed remote directive now, verify it and apply it.
      keygen              Make an Ed25519 key pair for signing remote directives.
      sign                Write a signed remote directive (roll back or roll forward).

      See 'rollbackctl <subcommand> --help' for detailed help.
    """

    static let subcommands: [String: String] = [
        "status": """
        OVERVIEW: Show which slot the next start runs, and why in one sentence.

        Also the data's reader floor and whether a rollback is data-safe now, as the
        current build last published them.

        USAGE: rollbackctl status [--json]

        OPTIONS:
          --json              Print JSON (active_slot, rollback, source, reason, slots, data, ...).
          -h, --help          Show help information.
        """,
        "rollback": """
        OVERVIEW: Persist the rollback flag: the next start runs the previous slot.

        First the current build converts its data back so that the previous one can read
        it (reverting its migrations, or restoring the snapshot taken before them and
        archiving the newer data). When it cannot, nothing changes and this fails.

        USAGE: rollbackctl rollback [--reason TEXT] [--force]

        OPTIONS:
          --reason TEXT       Why, recorded in the state and the history.
          --force             Roll back even when the data cannot be converted back: the
                              data is archived (never deleted) and the previous build
                              starts without it.
          -h, --help          Show help information.
        """,
        "rollforward": """
        OVERVIEW: Clear the rollback flag: the next start runs the current slot.

        USAGE: rollbackctl rollforward [--reason TEXT]

        OPTIONS:
          --reason TEXT       Why, recorded in the state and the history.
          -h, --help          Show help information.
        """,
        "history": """
        OVERVIEW: Show every switch and fallback, and every revert, restore and archive of
        the data before a rollback: when, from, to, source, reason.

        USAGE: rollbackctl history [--json]

        OPTIONS:
          --json              Print JSON (an array of events, oldest first).
          -h, --help          Show help information.
        """,
        "mark-good": """
        OVERVIEW: Mark the build in SLOT good, durably: its starts are no longer counted.

        USAGE: rollbackctl mark-good [SLOT]

        ARGUMENTS:
          SLOT                current or previous (default: the slot the next start runs).

        OPTIONS:
          -h, --help          Show help information.
        """,
        "mark-bad": """
        OVERVIEW: Mark the build in SLOT bad: the launcher runs the other slot, and if the
        rollback flag selects SLOT it moves to the other slot.

        USAGE: rollbackctl mark-bad [SLOT]

        ARGUMENTS:
          SLOT                current or previous (default: the slot the next start runs).

        OPTIONS:
          -h, --help          Show help information.
        """,
        "verify": """
        OVERVIEW: Check both slots against the manifest: presence, permissions, size, ELF,
        SHA-256 (always hashed, ignoring the launcher's cache).

        USAGE: rollbackctl verify

        OPTIONS:
          -h, --help          Show help information.
        """,
        "inspect": """
        OVERVIEW: Load one AppCore library and print its version, build, ABI stamp, size and
        SHA-256 as key=value lines (scripts/bundle writes the manifest from them).

        USAGE: rollbackctl inspect <path> [--json]

        OPTIONS:
          --json              Print JSON.
          -h, --help          Show help information.
        """,
        "sync": """
        OVERVIEW: Fetch the signed remote directive, verify it (signature by a trusted key, app
        id, serial above the last accepted one, expiry, current version, rollout) and apply
        it. The outcome is kept in the state directory and shown by 'rollbackctl status'.
        Anything but an applied directive leaves the decision as it is.

        USAGE: rollbackctl sync [--url URL] [--deadline-ms N]

        OPTIONS:
          --url URL           Fetch this URL instead of the manifest's remote.url.
          --deadline-ms N     One deadline for the whole fetch (default: the manifest's
                              remote.deadline_ms, else 5000).
          --background        Print nothing, and exit at once if another sync is running
                              (how the launcher starts it).
          -h, --help          Show help information.

        EXIT STATUS:
          0 applied, unchanged or not applicable; 1 refused, unreachable or not configured.
        """,
        "keygen": """
        OVERVIEW: Make an Ed25519 key pair: DIR/directive.key (private, mode 0600; keep it off
        the servers) and DIR/directive.pub (give it to scripts/bundle --trust-key). Never
        overwrites existing keys.

        USAGE: rollbackctl keygen --out DIR

        OPTIONS:
          --out DIR           The directory to write (created with mode 0700 if missing).
          -h, --help          Show help information.
        """,
        "sign": """
        OVERVIEW: Write a signed directive for installs to fetch: run the previous slot (roll
        back) or the current one (roll forward) on installs whose current slot runs one of
        the given versions.

        USAGE: rollbackctl sign --key FILE --decision previous|current --applies-to VERSION --reason TEXT [options]
               rollbackctl sign --renew FILE --key FILE [--expires-in TIME] [--serial N] [--out FILE]

        OPTIONS:
          --key FILE          A private key from keygen; repeat to sign with several keys.
          --decision WHICH    previous (roll back) or current (roll forward).
          --applies-to VER    A current-slot version the directive is for; repeatable.
          --reason TEXT       Shown by 'rollbackctl status' on every install and recorded.
          --serial N          Must go up with every directive (default: the time in seconds).
          --expires-in TIME   How long installs may act on it: 90s, 30m, 12h, 7d (default 7d).
          --expires-at TIME   Or an RFC 3339 time (2026-05-08T12:00:00Z).
          --issued-at TIME    RFC 3339 (default: now).
          --rollout-percent N Only installs whose bucket is below N (0-100) apply it.
          --app-id ID         The app (default: the bundle's app id).
          --out FILE          Where to write it (default: stdout; with --renew, FILE itself).
          --renew FILE        Re-sign FILE's directive as it is, with a new serial (the time
                              in seconds, or one more), issued now, expiring in --expires-in
                              (default 1d): run it from cron so installs can tell a live
                              publisher from a frozen mirror. Only a file these keys signed.
          -h, --help          Show help information.
        """,
    ]

    /// The subcommands rollbackctl hands to rollbackctl-remote, which links networking and
    /// libcrypto so that rollbackctl itself (and `status`) pays for neither at start.
    static let remoteSubcommands: Set<String> = ["sync", "keygen", "sign"]

    static func usageLine(_ subcommand: String?) -> String {
        guard let subcommand, let text = subcommands[subcommand],
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("USAGE:") }) else {
            return "Usage: rollbackctl [--state-dir DIR] [--bundle DIR] <subcommand> [options]"
        }
        return "Usage: " + line.dropFirst("USAGE: ".count)
    }
}
