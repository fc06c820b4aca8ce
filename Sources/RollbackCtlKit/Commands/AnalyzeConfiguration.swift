extension CommandConfiguration {
    /// `analyze`: the analyzer the supervisor runs for a build on probation (internal: not in
    /// the tool's help; the protocol is in docs/analysis.md).
    package static let analyze = CommandConfiguration(
        name: "analyze",
        abstract: "Judge a build on probation by its analysis.* checks (run by the supervisor).",
        overview: """
            Run the bundle's analysis (the manifest's analysis.* settings, overridden by
            DIR/analysis.override) for the build on probation until --ends-at, and print one
            line per event on standard output: 'measurement NAME PHASE SENTENCE' and, last,
            'verdict WORD SENTENCE' (passed, failed, held, inconclusive,
            would_roll_back or would_hold). Reads 'app-failures N' and
            'app-bad REASON' lines on standard input; exits at once when it closes. The
            supervisor runs this command; it is not meant to be run by hand.
            """,
        options: [
            .init("--slot", .value("SLOT"), required: true, help: "The slot on probation: current or previous."),
            .init("--build", .value("SHA256"), required: true, help: "The build on probation (its library's SHA-256): $build in queries."),
            .init("--version", .value("VERSION"), required: true, help: "Its version: $version in queries."),
            .init("--ends-at", .value("UNIX_MS"), required: true, help: "When the bake window ends (Unix time in milliseconds)."),
            .init("--baseline-pid", .value("PID"), help: "analysis.baseline: the previous build's child, serving beside the build on probation."),
            .init("--canary-pid", .value("PID"), help: "analysis.baseline: the child of the build on probation."),
            .init("--baseline-version", .value("VERSION"), help: "analysis.baseline: the previous build's version."),
            .init("--baseline-slot", .value("SLOT"), help: "analysis.baseline: the previous build's slot."),
            .init("--baseline-build", .value("SHA256"), help: "analysis.baseline: the previous build's SHA-256."),
            .init("--no-baseline", .value("REASON"), help: "analysis.baseline: no build serves beside it, and why."),
        ],
        sections: [("EXIT STATUS", "0 after the verdict or when standard input closes; 64 bad usage; 78 the analysis settings do not read.")],
        isRemote: true)
}
