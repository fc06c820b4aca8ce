import SwitchbackCore

/// `verify`: hash both slots and check them against the manifest.
struct VerifyCommand {
    let workspace: Workspace

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
        if !failures.isEmpty {
            throw .failure("\(failures.joined(separator: " and ")) failed verification; rebuild the bundle with scripts/bundle.")
        }
    }
}
