/// Every rollbackctl subcommand, in the order `rollbackctl --help` lists them: the one place
/// a new command is added. The remote ones are configurations only; rollbackctl-remote
/// supplies their commands (`RollbackCtl.main(_:console:remote:)`).
package enum CommandTable {
    /// The commands rollbackctl runs itself.
    static let local: [any Command.Type] = [
        StatusCommand.self, RollbackCommand.self, RollforwardCommand.self, HistoryCommand.self,
        MarkGoodCommand.self, MarkBadCommand.self, PromoteCommand.self, AbortCommand.self, BakeWindowCommand.self,
        VerifyCommand.self, InspectCommand.self,
    ]

    /// The commands rollbackctl-remote runs.
    package static let remote: [CommandConfiguration] = [.sync, .keygen, .sign, .rollout, .rolloutStatus]

    /// Every configuration, local then remote.
    package static let all: [CommandConfiguration] = local.map { $0.configuration } + remote

    /// Commands rollbackctl-remote runs for another program, not for people: `analyze`, the
    /// supervisor's analyzer (docs/analysis.md), and `deliver-hooks` (docs/hooks.md). Not in `all`, so the tool's help does
    /// not list them; each still has its own `--help`.
    package static let internalRemote: [CommandConfiguration] = [.analyze, .deliverHooks]

    package static func configuration(named name: String) -> CommandConfiguration? {
        all.first { $0.name == name } ?? internalRemote.first { $0.name == name }
    }

    static func localCommand(named name: String) -> (any Command.Type)? {
        local.first { $0.configuration.name == name }
    }
}
