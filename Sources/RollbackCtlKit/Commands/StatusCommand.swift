/// `status`: which slot the next start runs and why.
struct StatusCommand {
    let workspace: Workspace
    let json: Bool

    func run(_ console: Console) throws(CommandError) {
        let report = try StatusReport(workspace: workspace)
        console.out(json ? JSON.render(report.json) : report.text)
    }
}
