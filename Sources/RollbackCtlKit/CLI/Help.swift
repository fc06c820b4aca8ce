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
      status              Which slot runs next and why; both slots' versions.
      rollback            Persist the flag: run the previous slot.
      rollforward         Clear the flag: run the current slot.
      history             Every switch: when, from, to, source, reason.
      mark-good           Mark a slot's build good: its starts are no longer counted.
      mark-bad            Mark a slot's build bad: the other slot runs.
      verify              Check both slots against the manifest.
      inspect             Show the version, build and ABI stamp of an AppCore library.

      See 'rollbackctl <subcommand> --help' for detailed help.
    """

    static let subcommands: [String: String] = [
        "status": """
        OVERVIEW: Show which slot the next start runs, and why in one sentence.

        USAGE: rollbackctl status [--json]

        OPTIONS:
          --json              Print JSON (active_slot, rollback, source, reason, slots, ...).
          -h, --help          Show help information.
        """,
        "rollback": """
        OVERVIEW: Persist the rollback flag: the next start runs the previous slot.

        USAGE: rollbackctl rollback [--reason TEXT]

        OPTIONS:
          --reason TEXT       Why, recorded in the state and the history.
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
        OVERVIEW: Show every switch and fallback: when, from, to, source, reason.

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
    ]

    static func usageLine(_ subcommand: String?) -> String {
        guard let subcommand, let text = subcommands[subcommand],
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("USAGE:") }) else {
            return "Usage: rollbackctl [--state-dir DIR] [--bundle DIR] <subcommand> [options]"
        }
        return "Usage: " + line.dropFirst("USAGE: ".count)
    }
}
