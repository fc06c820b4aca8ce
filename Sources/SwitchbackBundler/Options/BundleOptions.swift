import Foundation
import SwitchbackCore

/// What `switchback-bundle` is asked to do. Parsed from one table (`BundleOptions.table`):
/// each option's name, argument, help line and effect in one place; the help text and the
/// usage errors are generated from it. Values the launcher reads are checked with the
/// launcher's own parsers, so a bundle never carries a setting its launcher refuses.
public struct BundleOptions: Sendable {
    public var package = "."
    public var product: String?
    public var out: String?
    public var appID: String?
    public var firstRelease = false
    public var previousFrom: String?
    public var tarball: String?
    public var buildID: String?
    public var keepDebugInfo = false
    /// Manifest settings in the order given (`trial.tries`, `supervise.*`, `remote.*`, ...).
    public var settings: [(String, String)] = []
    public var listen: [String] = []
    public var trustKeys: [String] = []
    public var help = false

    public init() {}

    struct Option: Sendable {
        var name: String
        var argument: String?
        var help: String
        var apply: @Sendable (inout BundleOptions, String) throws(BundlerError) -> Void
    }

    static func number(_ name: String, _ value: String, atLeast minimum: Int = 0) throws(BundlerError) -> String {
        guard let number = Int(value), number >= minimum, number <= ValueRange.duration.upperBound else {
            throw BundlerError(.usage, "\(name) needs a whole number\(minimum > 0 ? " of at least \(minimum)" : ""), not '\(value)'.")
        }
        return String(number)
    }

    static let superviseSettings = ["grace-ms", "backoff-initial-ms", "backoff-max-ms", "backoff-reset-after-ms", "crash-limit",
                                    "crash-window-ms", "poll-ms", "start-deadline-ms", "min-ready-ms", "watchdog-ms",
                                    "probe-interval-ms", "drain-ms"]

    static let table: [Option] = [
        Option(name: "--package", argument: "DIR", help: "the app package (default: the current directory)") { $0.package = $1 },
        Option(name: "--product", argument: "NAME", help: "its dynamic library product (default: the package's only one)") { $0.product = $1 },
        Option(name: "--out", argument: "DIR", help: "where the bundle goes (default: DIR/dist of the package)") { $0.out = $1 },
        Option(name: "--app-id", argument: "ID", help: "names the state directory (default: the product's name)") { (options, value) throws(BundlerError) in
            guard !value.isEmpty, !value.hasPrefix("."), !value.contains("/"), !value.contains(where: \.isWhitespace) else {
                throw BundlerError(.usage, "The app id '\(value)' cannot name a directory; pass --app-id with letters, digits, dots and dashes.")
            }
            options.appID = value
        },
        Option(name: "--first-release", help: "no PreviousVersion/ pin yet: the previous slot holds the current build") { options, _ in options.firstRelease = true },
        Option(name: "--previous-from", argument: "PATH", help: "take the previous slot from the last release's tarball or bundle instead of rebuilding it") { $0.previousFrom = $1 },
        Option(name: "--tarball", argument: "FILE", help: "also write the bundle as a .tar.gz release artifact") { $0.tarball = $1 },
        Option(name: "--build-id", argument: "ID", help: "the current build's id (default: the commit); without .git, pass the full commit id") { $0.buildID = $1 },
        Option(name: "--tries", argument: "N", help: "starts a new build gets to mark itself good (default 3)") { (options, value) throws(BundlerError) in
            options.settings.append(("trial.tries", try number("--tries", value, atLeast: 1)))
        },
        Option(name: "--no-good-on-exit-zero", help: "exit code 0 does not count as a good start") { options, _ in options.settings.append(("trial.good_on_exit_zero", "false")) },
        Option(name: "--supervise", help: "the launcher runs the app as a supervised child (docs/supervise.md)") { options, _ in options.supervise() },
        Option(name: "--listen", argument: "[NAME=]HOST:PORT", help: "the supervisor listens here and hands the socket to every child (repeatable)") { (options, value) throws(BundlerError) in
            guard !value.contains(","), ListenAddress.parseList(value) != nil else {
                throw BundlerError(.usage, "--listen needs [NAME=]HOST:PORT with a numeric host or localhost, like 127.0.0.1:8080, not '\(value)'.")
            }
            options.listen.append(value)
            options.supervise()
        },
        Option(name: "--ready", argument: "SPEC", help: "how a supervised child shows it is ready: mark, tcp:HOST:PORT, http://127.0.0.1:PORT/PATH, command:CMD") { (options, value) throws(BundlerError) in
            guard ReadinessCheck(value) != nil, !value.contains("\n") else {
                throw BundlerError(.usage, "--ready needs mark, tcp:HOST:PORT, http://127.0.0.1:PORT/PATH or command:COMMAND, not '\(value)'.")
            }
            options.settings.append(("supervise.ready", value))
        },
        Option(name: "--directive-url", argument: "URL", help: "where installs fetch signed directives, or file:///PATH to read them from a local file (docs/remote.md)") { (options, value) throws(BundlerError) in
            // A file is read by path: file:///etc/app/directive.json (or file://localhost/...).
            if value.lowercased().hasPrefix("file:"), !(value.hasPrefix("file:///") || value.hasPrefix("file://localhost/")) {
                throw BundlerError(.usage, "--directive-url needs an absolute path in a file URL, such as file:///etc/app/directive.json, not '\(value)'.")
            }
            options.settings.append(("remote.url", value))
        },
        Option(name: "--trust-key", argument: "FILE", help: "a public key directives must be signed with (repeatable)") { $0.trustKeys.append($1) },
        Option(name: "--check-interval", argument: "S", help: "seconds between directive checks") { (options, value) throws(BundlerError) in
            options.settings.append(("remote.interval_s", try number("--check-interval", value)))
        },
        Option(name: "--check-splay", argument: "S", help: "how overdue a check must be to count as a first one; caps --first-check (default: the interval)") { (options, value) throws(BundlerError) in
            options.settings.append(("remote.splay_s", try number("--check-splay", value)))
        },
        Option(name: "--first-check", argument: "S", help: "the longest random wait before a new or restarted install's first check (default 30)") { (options, value) throws(BundlerError) in
            options.settings.append(("remote.first_check_s", try number("--first-check", value)))
        },
        Option(name: "--retry-floor", argument: "S", help: "the shortest wait before a failed check is retried (default 30)") { (options, value) throws(BundlerError) in
            options.settings.append(("remote.retry_floor_s", try number("--retry-floor", value)))
        },
        Option(name: "--allow-insecure-http", help: "accept directives over plain http (not needed for a file:// URL)") { options, _ in options.settings.append(("remote.allow_insecure_http", "true")) },
        Option(name: "--check-before-start", help: "check for a directive before the app starts") { options, _ in options.settings.append(("remote.check_before_start", "true")) },
        Option(name: "--metrics-dir", argument: "DIR", help: "write the install's metrics for node_exporter's textfile collector into DIR") { (options, value) throws(BundlerError) in
            guard value.hasPrefix("/"), !value.contains("\n") else {
                throw BundlerError(.usage, "--metrics-dir needs an absolute directory, such as /var/lib/prometheus/node-exporter.")
            }
            options.settings.append(("metrics.textfile_dir", value.count > 1 && value.hasSuffix("/") ? String(value.dropLast()) : value))
        },
        Option(name: "--bake-window", argument: "S", help: "a new build is on probation for S seconds under the supervisor (analysis.window_s; docs/analysis.md)") { (options, value) throws(BundlerError) in
            options.settings.append(("analysis.window_s", try number("--bake-window", value)))
        },
        Option(name: "--analysis", argument: "FILE", help: "the bake window's checks: a file of analysis.* settings (docs/analysis.md)") { (options, value) throws(BundlerError) in
            options.settings += try analysisSettings(file: value)
        },
        Option(name: "--hook-command", argument: "PATH", help: "run PATH with each history event as JSON on its stdin (docs/hooks.md)") { options, value in
            options.settings.append(("hooks.command", value))
        },
        Option(name: "--hook-url", argument: "URL", help: "POST each history event to URL, signed with --hook-secret-file's key (docs/hooks.md)") { options, value in
            options.settings.append(("hooks.url", value))
        },
        Option(name: "--hook-secret-file", argument: "PATH", help: "the file on the host holding the webhook's HMAC-SHA256 key") { options, value in
            options.settings.append(("hooks.secret_file", value))
        },
        Option(name: "--keep-debug-info", help: "ship the slots unstripped") { options, _ in options.keepDebugInfo = true },
    ] + superviseSettings.map { setting in
        Option(name: "--supervise-" + setting, argument: "N", help: "supervise mode's \(setting.replacingOccurrences(of: "-", with: " ")) (docs/supervise.md)") { (options, value) throws(BundlerError) in
            options.settings.append(("supervise." + setting.replacingOccurrences(of: "-", with: "_"), try number("--supervise-" + setting, value)))
        }
    }

    /// The `analysis.*` settings of an `--analysis` file (KeyValueText). Every key must be an
    /// `analysis.` key; a file that cannot be read or parsed is a usage error with the sentence.
    static func analysisSettings(file: String) throws(BundlerError) -> [(String, String)] {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw BundlerError(.usage, "--analysis: the file \(file) cannot be read; pass a file of analysis.* settings (docs/analysis.md).")
        }
        let text: KeyValueText
        do { text = try KeyValueText.parse([UInt8](data), describing: "The --analysis file \(file)") } catch {
            throw BundlerError(.usage, "--analysis: \(error.message)")
        }
        var settings: [(String, String)] = []
        for index in 0..<text.count {
            let key = text.key(at: index)
            guard key.hasPrefix("analysis.") else {
                throw BundlerError(.usage, "--analysis: the file \(file) sets '\(key)', which is not an analysis.* setting; keep only analysis.* keys in it.")
            }
            settings.append((key, text.value(at: index)))
        }
        return settings
    }

    /// The last value given for each `analysis.*` key wins (`--bake-window` after `--analysis`
    /// overrides the file's window), and the result must be a spec the analyzer accepts.
    mutating func settleAnalysis() throws(BundlerError) {
        var seen: Set<String> = []
        var kept: [(String, String)] = []
        for (key, value) in settings.reversed() {
            if key.hasPrefix("analysis.") {
                guard seen.insert(key).inserted else { continue }
            }
            kept.append((key, value))
        }
        settings = kept.reversed()
        var hooks: [String: String] = [:]
        for (key, value) in settings where key.hasPrefix("hooks.") { hooks[key] = value }
        do { _ = try HookSettings.parse(hooks) } catch { throw BundlerError(.usage, error.message) }
        guard settings.contains(where: { $0.0.hasPrefix("analysis.") }) else { return }
        var values: [String: String] = [:]
        for (key, value) in settings where key.hasPrefix("analysis.") { values[key] = value }
        if let problem = Self.analysisProblem(values) { throw BundlerError(.usage, problem) }
    }

    mutating func supervise() {
        if !settings.contains(where: { $0.0 == "supervise" }) { settings.append(("supervise", "true")) }
    }

    /// Parses the command line (without the program's name).
    public static func parse(_ arguments: [String]) throws(BundlerError) -> BundleOptions {
        var options = BundleOptions()
        var index = 0
        while index < arguments.count {
            var argument = arguments[index]
            index += 1
            if argument == "-h" || argument == "--help" { options.help = true; continue }
            var inline: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                inline = String(argument[argument.index(after: equals)...])
                argument = String(argument[..<equals])
            }
            guard let option = table.first(where: { $0.name == argument }) else {
                throw BundlerError(.usage, "Unknown option '\(argument)'.")
            }
            var value = ""
            if option.argument != nil {
                if let inline { value = inline } else {
                    guard index < arguments.count else { throw BundlerError(.usage, "\(argument) needs a value (\(option.argument!)).") }
                    value = arguments[index]
                    index += 1
                }
            } else if inline != nil {
                throw BundlerError(.usage, "\(argument) takes no value.")
            }
            try option.apply(&options, value)
        }
        if !options.listen.isEmpty { options.settings.append(("supervise.listen", options.listen.joined(separator: ","))) }
        try options.settleAnalysis()
        if options.firstRelease, options.previousFrom != nil {
            throw BundlerError(.usage, "--first-release and --previous-from contradict each other: a first release has no previous release.")
        }
        return options
    }

    /// The help text, made from the table.
    public static var helpText: String {
        var lines = ["OVERVIEW: Builds a Switchback bundle of an app package: the launcher, rollbackctl, both slots,",
                     "the Swift runtime they load, and a manifest that records every file's SHA-256.", "",
                     "USAGE: switchback-bundle [options]   (scripts/bundle in the Switchback repository)", "", "OPTIONS:"]
        for option in table {
            let head = "  " + option.name + (option.argument.map { " " + $0 } ?? "")
            lines.append(head.padding(toLength: max(head.count + 2, 34), withPad: " ", startingAt: 0) + option.help)
        }
        lines.append("  -h, --help".padding(toLength: 34, withPad: " ", startingAt: 0) + "show this help")
        return lines.joined(separator: "\n") + "\n"
    }
}
