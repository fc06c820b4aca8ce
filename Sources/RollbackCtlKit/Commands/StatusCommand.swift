/// `status`: which slot the next start runs and why.
struct StatusCommand: ReportCommand {
    static let configuration = CommandConfiguration(
        name: "status",
        abstract: "Which slot runs next and why; both slots' versions; the data.",
        overview: """
            Show which slot the next start runs, and why in one sentence.

            Also the data's reader floor and whether a rollback is data-safe now, as the
            current build last published them.
            """,
        options: [.init("--json", help: "Print JSON (active_slot, rollback, source, reason, slots, data, ...).")])

    let workspace: Workspace
    let json: Bool

    func run(_ console: Console) throws(CommandError) {
        let report = try StatusReport(workspace: workspace)
        console.out(json ? JSONWriter.render(report.document) : report.text)
    }
}
