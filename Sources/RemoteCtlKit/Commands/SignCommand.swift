#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RollbackCtlKit
import SwitchbackRemote

/// `sign`: a new directive (`SignCommand`), or with `--renew FILE` a renewed one (`RenewCommand`).
struct SignEntry: Command {
    static let configuration = CommandConfiguration.sign

    let perform: (Console) throws(CommandError) -> Void

    init(_ parsed: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        if let file = parsed.options["--renew"] {
            perform = try RenewCommand(parsed, file: file).run
        } else {
            perform = try SignCommand(parsed, bundle: context.bundle, stateDirectory: context.stateDirectory).run
        }
    }

    func run(_ console: Console) throws(CommandError) { try perform(console) }
}

/// `sign --key FILE ...` (without `--renew`): validates the fields, signs with every key and
/// writes the envelope.
struct SignCommand {
    let keyFiles: [String]
    let directive: Directive
    let output: String?

    init(_ parsed: ParsedArguments, bundle: String?, stateDirectory: String?, now: Date = Date()) throws(CommandError) {
        func usage(_ message: String) -> CommandError { .usage(message, subcommand: "sign") }
        keyFiles = parsed.lists["--key"] ?? []
        if keyFiles.isEmpty { throw usage("Missing '--key FILE'.") }

        let decision: DirectiveDecision
        switch parsed.options["--decision"] {
        case "previous", "run_previous", "rollback": decision = .runPrevious
        case "current", "run_current", "rollforward": decision = .runCurrent
        case nil: throw usage("Missing '--decision previous|current'.")
        case let other?: throw usage("'--decision' must be 'previous' or 'current', not '\(other)'.")
        }
        let versions = (parsed.lists["--applies-to"] ?? []).flatMap { $0.split(separator: ",").map(String.init) }
        if versions.isEmpty { throw usage("Missing '--applies-to VERSION' (the current-slot version to act on).") }
        guard let reason = parsed.options["--reason"] else { throw usage("Missing '--reason TEXT'.") }

        let serial: UInt64
        if let text = parsed.options["--serial"] {
            guard let value = UInt64(text), value > 0 else { throw usage("'--serial' must be a whole number of at least 1, not '\(text)'.") }
            serial = value
        } else {
            // The time in seconds, but always above the serial of the directive being
            // replaced: two directives signed within one second (a script, a quick fix) would
            // otherwise share a serial, and an install that applied the first would take the
            // second for the same one and ignore it.
            let previous = parsed.options["--out"].flatMap { Self.serial(ofDirectiveAt: $0) } ?? 0
            serial = max(UInt64(now.timeIntervalSince1970), previous &+ 1)
        }
        var issuedAt = now
        if let text = parsed.options["--issued-at"] {
            guard let date = Directive.parseTime(text) else { throw usage("'--issued-at' must be an RFC 3339 time such as 2026-05-01T12:00:00Z, not '\(text)'.") }
            issuedAt = date
        }
        let expiresAt: Date
        switch (parsed.options["--expires-at"], parsed.options["--expires-in"]) {
        case (.some, .some): throw usage("Give '--expires-at' or '--expires-in', not both.")
        case (let text?, nil):
            guard let date = Directive.parseTime(text) else { throw usage("'--expires-at' must be an RFC 3339 time such as 2026-05-08T12:00:00Z, not '\(text)'.") }
            expiresAt = date
        case (nil, let text):
            guard let seconds = Self.duration(text ?? "7d") else { throw usage("'--expires-in' must be a duration such as 90s, 30m, 12h or 7d, not '\(text ?? "")'.") }
            expiresAt = issuedAt.addingTimeInterval(seconds)
        }
        var rollout: Int?
        if let text = parsed.options["--rollout-percent"] {
            guard let value = Int(text) else { throw usage("'--rollout-percent' must be a whole number from 0 to 100, not '\(text)'.") }
            rollout = value
        }
        var appID = parsed.options["--app-id"]
        if appID == nil { appID = try? Workspace.open(bundle: bundle, stateDirectory: stateDirectory).manifest.appID }
        guard let appID else { throw usage("Missing '--app-id ID' (there is no bundle to take it from).") }

        directive = Directive(appID: appID, serial: serial, issuedAt: issuedAt, expiresAt: expiresAt, decision: decision,
                              appliesTo: versions, rolloutPercent: rollout, reason: reason)
        output = parsed.options["--out"]
    }

    func run(_ console: Console) throws(CommandError) {
        let data: Data
        let keyIDs: [String]
        let signer = try TrustedInputs.signer(keyFiles: keyFiles)
        do {
            keyIDs = signer.keyIDs
            data = try signer.sign(directive)
        } catch {
            throw .failure(String(describing: error))
        }
        let summary = "Signed directive serial \(directive.serial) for \(directive.appID): \(directive.decision.summary) on \(directive.appliesTo.joined(separator: ", ")), expires \(Directive.formatTime(directive.expiresAt)), key id \(keyIDs.joined(separator: ", "))"
        guard let output, output != "-" else {
            console.out(String(decoding: data, as: UTF8.self))
            return
        }
        try OutputFile.write(Array(data), to: output)
        console.out("\(summary); wrote \(output).")
    }

    /// The serial of the directive in the envelope at `path`, if it holds one (its signature is
    /// not checked: the serial only has to go up).
    static func serial(ofDirectiveAt path: String) -> UInt64? {
        guard let data = FileManager.default.contents(atPath: path),
              let envelope = try? JSONDecoder().decode(DirectiveEnvelope.self, from: data),
              let payload = Data(base64Encoded: envelope.payload),
              let directive = try? JSONDecoder().decode(Directive.self, from: payload) else { return nil }
        return directive.serial
    }

    /// "90s", "30m", "12h", "7d" (or bare seconds) in seconds.
    static func duration(_ text: String) -> TimeInterval? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let last = text.last else { return nil }
        let (digits, unit) = units[last].map { (text.dropLast(), $0) } ?? (Substring(text), 1)
        guard let value = Double(digits), value > 0 else { return nil }
        return value * unit
    }
}
