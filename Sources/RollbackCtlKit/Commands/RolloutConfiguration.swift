/// `rollout`, which rollbackctl-remote runs (it signs and measures): declared here beside the
/// other remote configurations so that rollbackctl parses it, prints its help and reports its
/// usage errors without linking networking or libcrypto.
extension CommandConfiguration {
    package static let rollout = CommandConfiguration(
        name: "rollout",
        abstract: "Carry a release through a fleet in steps, judged by Prometheus.",
        overview: """
            Publish a release to a growing share of the fleet: one signed directive per step of
            the plan (run the current slot for installs in buckets below the step's
            percentage), each followed by a pause in which the plan's analysis.* checks
            query Prometheus. It advances when a pause passes, publishes a rollback directive
            (run the previous slot, every install) when one fails, and stops for an operator
            at an approval step or an inconclusive analysis. Progress is kept in the state
            file, written before and after every publication: run the same command again
            after a stop, a crash or a kill -9 and it resumes where it was, never publishing a
            step twice. See docs/rollout.md.
            """,
        options: [
            .init("--plan", .value("FILE"), required: true, help: "The plan: rollout.* and analysis.* keys (KeyValueText)."),
            .init("--key", .repeated("FILE"), required: true, help: "A private key from keygen; repeat to sign with several keys."),
            .init("--out", .value("FILE"), required: true, help: """
                The directive file the installs fetch, in the directory a web
                server serves; replaced atomically at each step.
                """),
            .init("--state", .value("FILE"), required: true, help: "The rollout's progress (created at the first run)."),
            .init("--dry-run", help: "Print the steps and the directives it would publish; write nothing."),
            .init("--approve", help: """
                Let the first step waiting for an operator go on: an approval
                step, or a step whose analysis was inconclusive.
                """),
            .init("--promote-full", help: """
                Skip the remaining steps and their pauses: publish the last step
                (100%) now and finish, unanalysed (Argo's promote --full).
                """),
            .init("--abort", help: """
                Publish the rollback directive now (every install runs the previous
                slot); a rollout running in another shell then stops (exit 4).
                """),
        ],
        sections: [("EXIT STATUS", """
            0 complete (or aborted as asked); 2 rolled back by a failed analysis (or before);
            1 could not go on, or another rollout runs with this state file; 3 waiting for an
            operator (run again with --approve, --promote-full or --abort); 4 stopped: an
            --abort from another shell, or a directive published by hand, took the directive
            file over during a pause; 64 bad usage; 78 a bad plan.
            """)],
        isRemote: true)

    package static let rolloutStatus = CommandConfiguration(
        name: "rollout-status",
        abstract: "Show a rollout in progress: its step, its pause, each check's last measurement.",
        overview: """
            Read a rollout's state file (and the measurements its pause keeps beside it,
            FILE.checks) and say where it is: the step and its share of the fleet, the phase
            (pausing with the time left, waiting for an operator, complete, rolled back), each
            check's last measurement in the pause, each earlier step's result, and whether a
            rollout process holds the file now. Reads only; works while the rollout runs.
            """,
        options: [
            .init("--state", .value("FILE"), required: true, help: "The rollout's state file (rollout --state)."),
        ],
        sections: [("EXIT STATUS", "0 the state was shown; 1 there is no state file or it does not read; 64 bad usage.")],
        isRemote: true)
}
