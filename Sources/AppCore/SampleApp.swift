#if canImport(Glibc)
import Glibc
#endif
import Switchback

/// The sample app: a greeting, `version`, `crash`, a notes store and a small server (a
/// heartbeat loop, HTTP with `--http`). It uses the SDK as any outside app does
/// (docs/adopting.md).
public enum SampleApp: SwitchbackApp {
    /// Runs one command and returns the exit code. Every command but the failure
    /// demonstrations (`crash`, `hang`, `exit`) and `serve` (which marks itself good once it
    /// is up) marks the start good at once.
    public static func main(_ launch: LaunchInfo) -> Int32 {
        let arguments = launch.arguments
        let command = arguments.first
        if !["crash", "hang", "exit", "serve"].contains(command ?? "") { launch.markGood() }
        switch command {
        case nil:
            let slot = launch.slot.map { " (\($0.rawValue) slot)" } ?? ""
            print("Hello from the Switchback sample app, version \(launch.version)\(slot): \(change(launch)).")
            return 0
        case "version":
            print(launch.version)
            return 0
        case "crash":
            // Crashes before the app marks itself healthy, to demonstrate automatic rollback.
            crash(arguments.dropFirst().first ?? "fatal")
        case "hang":
            // Never marks itself good: for an outside SIGKILL. `--ignore-sigterm` makes it
            // outlast a polite stop, so the supervisor has to escalate to SIGKILL.
            if arguments.dropFirst().first == "--ignore-sigterm" { signal(SIGTERM, SIG_IGN) }
            while true { sleep(60) }
        case "args":
            for argument in arguments.dropFirst() { print(argument) }
            return 0
        case "env":
            for name in arguments.dropFirst() { print(getenv(name).map { String(cString: $0) } ?? "(unset)") }
            return 0
        case "exit":
            return Int32(arguments.dropFirst().first ?? "") ?? 0
        case "note":
            return NotesCommand(store: NotesStore(directory: launch.dataDirectory, version: launch.version)).run(Array(arguments.dropFirst()))
        case "serve":
            return Server(launch: launch).run(Array(arguments.dropFirst()))
        default:
            printError("Error: unknown command '\(arguments[0])'. Commands: version, note add TEXT, note list, serve [--http HOST:PORT], crash [fatal|segv|abort], hang, args, env, exit N.")
            return 64
        }
    }
}

/// Dies the way `kind` says, without marking the start good.
func crash(_ kind: String) -> Never {
    switch kind {
    case "segv":
        raise(SIGSEGV)
    case "abort":
        abort()
    default:
        break
    }
    fatalError("the sample app crashes on purpose")
}

/// Writes one line to stderr.
func printError(_ line: String) {
    var text = line + "\n"
    _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
}
