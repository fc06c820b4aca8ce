import CSwitchbackSystem
#if canImport(Glibc)
import Glibc
#endif
import RollbackCtlKit
import SwitchbackAnalysis
import SwitchbackCore
import SwitchbackFiles

/// `analyze --state-dir DIR --slot SLOT --build SHA256 --version V --ends-at UNIX_MS`: the
/// analyzer the supervisor spawns when a build goes on probation (docs/analysis.md).
///
/// The protocol, in frames (`AnalyzerMessage`: `LENGTH SP PAYLOAD LF`, the payload's text
/// made safe by `OutsideText`), each written with one `write(2)` as it happens:
/// - stdout: `measurement NAME PHASE SENTENCE` per measurement, then
///   `verdict WORD SENTENCE` (`AnalysisVerdict.words`: passed, failed, held, inconclusive,
///   would_roll_back, would_hold), then exit 0;
/// - stdin: `app-failures N` (the app's cumulative failure count), `app-bad REASON`; other
///   kinds are ignored; a malformed frame is said once on stderr and nothing after it is
///   read; end of input (the supervisor is gone) exits at once, with no verdict;
/// - the settings: the manifest's `analysis.*`, with `DIR/analysis.override`'s keys winning.
///   Settings that do not read, or no analysis at all: one sentence on stderr, exit 78.
///
/// It dies with its parent (`PR_SET_PDEATHSIG`) as well.
struct AnalyzeCommand: Command {
    static let configuration = CommandConfiguration.analyze

    /// The file `rollbackctl bake-window` writes in the state directory.
    static let overrideFileName = "analysis.override"

    let workspace: Workspace
    let slot: BuildSlot
    let build: String
    let version: String
    let endsAt: Int64
    /// `--baseline-pid P --canary-pid Q`, or `--no-baseline REASON` (analysis.baseline=true).
    let comparison: AnalysisRun.Comparison?
    /// `--baseline-version`, `--baseline-build`, `--baseline-slot`: the baseline's `$version`,
    /// `$build` and `$slot` for a compared Prometheus check (`compare`).
    let baselineVersion: String?
    let baselineBuild: String?
    let baselineSlot: String?

    init(_ parsed: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        func usage(_ message: String) -> CommandError { .usage(message, subcommand: "analyze") }
        for name in ["--slot", "--build", "--version", "--ends-at"] where (parsed.options[name] ?? "").isEmpty {
            throw usage("Missing '\(name)'.")
        }
        guard let slot = BuildSlot(rawValue: parsed.options["--slot"]!) else {
            throw usage("'--slot' must be current or previous, not '\(parsed.options["--slot"]!)'.")
        }
        let build = parsed.options["--build"]!
        guard build.utf8.count <= 128, build.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw usage("'--build' must be the build's SHA-256 (printable, no spaces), not '\(build.prefix(40))'.")
        }
        let version = parsed.options["--version"]!
        guard version.utf8.count <= 256, version.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
            throw usage("'--version' must be one printable line of at most 256 bytes.")
        }
        let text = parsed.options["--ends-at"]!
        guard let endsAt = Int64(text), endsAt >= 0, endsAt <= ValueRange.unixTime.upperBound * 1000 else {
            throw usage("'--ends-at' must be a Unix time in milliseconds, not '\(text.prefix(40))'.")
        }
        self.slot = slot
        self.build = build
        self.version = version
        self.endsAt = endsAt
        comparison = try Self.comparison(parsed, usage: usage)
        baselineVersion = parsed.options["--baseline-version"]
        baselineBuild = parsed.options["--baseline-build"]
        baselineSlot = parsed.options["--baseline-slot"].flatMap { BuildSlot(rawValue: $0)?.rawValue }
        workspace = try context.workspace()
    }

    /// The baseline the supervisor named: both pids (positive, different), or why there is none.
    static func comparison(_ parsed: ParsedArguments, usage: (String) -> CommandError) throws(CommandError) -> AnalysisRun.Comparison? {
        if let why = parsed.options["--no-baseline"] {
            return .none(OutsideText(why, limit: 512).text)
        }
        let baseline = parsed.options["--baseline-pid"], canary = parsed.options["--canary-pid"]
        guard baseline != nil || canary != nil else { return nil }
        guard let baseline, let canary, let baselinePID = Int32(baseline), let canaryPID = Int32(canary),
              baselinePID > 0, canaryPID > 0, baselinePID != canaryPID else {
            throw usage("'--baseline-pid' and '--canary-pid' go together, as two different process ids.")
        }
        return .beside(baselinePID: baselinePID, canaryPID: canaryPID)
    }

    func run(_ console: Console) throws(CommandError) {
        // Die with the supervisor; and if it is already gone, stdin's end says so below.
        _ = switchback_set_parent_death_signal(SIGKILL)
        let spec = try Self.spec(manifest: workspace.manifest, stateDirectory: workspace.directory.path)
        var variables = ["version": version, "build": build, "slot": slot.rawValue, "app_id": workspace.manifest.appID]
        variables["hostname"] = Self.hostname()
        var baselineVariables: [String: String] = [:]
        if let baselineVersion {
            variables["previous_version"] = baselineVersion
            baselineVariables["version"] = baselineVersion
        }
        baselineVariables["build"] = baselineBuild
        baselineVariables["slot"] = baselineSlot
        let analysis = AnalysisRun(spec: spec, variables: variables, comparison: comparison, baselineVariables: baselineVariables)
        Self.readSignals(into: analysis)
        let verdict = analysis.run(endingAt: endsAt) { event in
            switch event {
            case .measurement(let measurement):
                Self.emit(.measurement(check: measurement.check, phase: "\(measurement.phase)", sentence: OutsideText(measurement.sentence, limit: AnalyzerMessage.maximumPayloadBytes / 2)))
            case .verdict(let verdict):
                Self.emit(.verdict(word: verdict.word, sentence: OutsideText(verdict.sentence, limit: AnalyzerMessage.maximumPayloadBytes / 2)))
            }
        }
        _ = verdict
        // The verdict is written (write(2), nothing buffered). A probe thread may still be in a
        // libcurl transfer: exit(3)'s teardown (OpenSSL's and libcurl's atexit handlers) under
        // it crashed one analyzer in a loaded CI run (SIGSEGV after its verdict). Nothing is
        // left to run here, so the process ends without it.
        _exit(0)
    }

    /// The analysis of the manifest's settings with the override's on top; throws
    /// `configInvalid` (exit 78) with the sentence when they do not read or there is none.
    static func spec(manifest: Manifest, stateDirectory: String) throws(CommandError) -> AnalysisSpec {
        var settings = AnalysisSpec.settings(in: manifest.settings)
        let path = stateDirectory + "/" + overrideFileName
        do {
            if let bytes = try FileSystem.read(path, limit: 64 << 10) {
                let text = try KeyValueText.parse(bytes, describing: "The bake-window override \(path)")
                for (key, value) in AnalysisSpec.settings(in: text) { settings[key] = value }
            }
        } catch {
            throw .failure("\(error.clause); fix it or remove it with 'rollbackctl bake-window default'.", code: .configInvalid)
        }
        let spec: AnalysisSpec?
        do { spec = try AnalysisSpec.parse(settings) } catch {
            throw .failure(error.message, code: .configInvalid)
        }
        guard let spec else {
            throw .failure("The bundle has no analysis to run (analysis.window_s is absent or 0); set one with 'rollbackctl bake-window SECONDS' or scripts/bundle --bake-window.", code: .configInvalid)
        }
        return spec
    }

    /// Reads the supervisor's lines on a thread of its own; exits the process when stdin ends.
    static func readSignals(into analysis: AnalysisRun) {
        let reader = SignalReader(analysis: analysis)
        var thread = pthread_t()
        let box = Unmanaged.passRetained(reader)
        let created = pthread_create(&thread, nil, { pointer in
            Unmanaged<SignalReader>.fromOpaque(pointer!).takeRetainedValue().readUntilEnd()
            return nil
        }, box.toOpaque())
        if created != 0 {
            box.release()
            writeError("Error: Cannot start the thread that reads the supervisor's signals (error \(created)).")
            _exit(1)
        }
        pthread_detach(thread)
    }

    /// One frame on stdout, with one `write(2)` (no buffering: the supervisor reads it at once).
    static func emit(_ message: AnalyzerMessage) {
        message.frame.withUnsafeBufferPointer { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(1, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    _exit(0)  // the supervisor closed its end: nobody is left to tell
                }
                offset += written
            }
        }
    }

    static func writeError(_ line: String) {
        var text = line + "\n"
        _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
    }

    /// `gethostname(2)`.
    static func hostname() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The reader of the supervisor's frames: `app-failures N`, `app-bad REASON`.
final class SignalReader: @unchecked Sendable {
    let analysis: AnalysisRun

    init(analysis: AnalysisRun) {
        self.analysis = analysis
    }

    func readUntilEnd() {
        var frames = AnalyzerFrameReader()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { _exit(0) }  // the supervisor is gone
            guard !frames.isBroken else { continue }  // read on only to see the end
            frames.append(buffer[0..<count])
            while true {
                do {
                    guard let payload = try frames.next() else { break }
                    if let message = AnalyzerMessage(payload: payload) { handle(message) }
                } catch {
                    AnalyzeCommand.writeError("rollbackctl-remote analyze: the supervisor wrote a malformed frame: \(error.clause); nothing more it writes is read.")
                    break
                }
            }
        }
    }

    func handle(_ message: AnalyzerMessage) {
        switch message {
        case .appFailures(let count): analysis.reportAppFailures(count)
        case .appBad(let reason): analysis.reportAppBad(reason.text)
        case .measurement, .verdict: break
        }
    }
}
