#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RollbackCtlKit
import SwitchbackRemote

/// `keygen --out DIR`: a fresh Ed25519 key pair (see `DirectiveKeyFiles.generate(in:)`).
struct KeygenCommand: Command {
    static let configuration = CommandConfiguration.keygen

    let directory: String

    init(_ parsed: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        guard let directory = parsed.options["--out"], !directory.isEmpty else {
            throw .usage("Missing '--out DIR'.", subcommand: "keygen")
        }
        self.directory = directory
    }

    func run(_ console: Console) throws(CommandError) {
        let keys: DirectiveKeyFiles
        do { keys = try DirectiveKeyFiles.generate(in: URL(fileURLWithPath: directory)) } catch {
            throw .failure(String(describing: error))
        }
        console.out("Wrote \(keys.privateKeyURL.path) (private key, mode 0600: keep it secret and off the servers).")
        console.out("Wrote \(keys.publicKeyURL.path) (public key, key id \(keys.keyID)): build bundles with scripts/bundle --trust-key \(keys.publicKeyURL.path).")
    }
}
