import SwitchbackCore

/// `verify`: hash both slots and check them against the manifest.
struct VerifyCommand: Command {
    static let configuration = CommandConfiguration(
        name: "verify",
        abstract: "Check both slots against the manifest.",
        overview: """
            Check both slots against the manifest: presence, permissions, size, ELF,
            SHA-256 (always hashed, ignoring the launcher's cache); and the manifest's
            analysis settings, as the supervisor reads them.
            """)

    let workspace: Workspace

    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        workspace = try context.workspace()
    }

    func run(_ console: Console) throws(CommandError) {
        var failures: [String] = []
        for slot in BuildSlot.allCases {
            let record = workspace.manifest[slot]
            do {
                let verified = try workspace.verifier(useCache: false).verify(slot)
                console.out("\(slot.rawValue): ok (\(record.version), \(record.size) bytes, sha256 \(record.sha256.prefix(16))…) \(verified.path)")
            } catch {
                console.out("\(slot.rawValue): FAILED: \(error.message)")
                failures.append(slot.rawValue)
            }
        }
        // The analysis a supervisor would refuse to start on (a key that does not read, plain
        // http to another host without analysis.allow_insecure_http) fails here too.
        do { _ = try AnalysisSpec.parse(AnalysisSpec.settings(in: workspace.manifest.settings)) } catch {
            console.out("analysis: FAILED: \(error.message)")
            failures.append("the analysis settings")
        }
        do { _ = try HookSettings.parse(HookSettings.settings(in: workspace.manifest.settings)) } catch {
            console.out("hooks: FAILED: \(error.message)")
            failures.append("the hook settings")
        }
        if !failures.isEmpty {
            throw .failure("\(failures.joined(separator: " and ")) failed verification; rebuild the bundle with scripts/bundle.")
        }
    }
}
