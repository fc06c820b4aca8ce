#if canImport(Glibc)
import Glibc
#endif
import Switchback

/// NotesServer: a small notes service over HTTP, run by Switchback's launcher.
///
///     serve [--host ADDRESS] [--port N]   the HTTP server (host: 127.0.0.1; port: $PORT, else 8080)
///     version                             prints the version
public enum NotesServer: AsyncSwitchbackApp {
    static let usage = "Usage: NotesServer serve [--host ADDRESS] [--port N] | version"

    public static func main(_ launch: LaunchInfo) async throws -> Int32 {
        let arguments = launch.arguments
        switch arguments.first {
        case "serve":
            // Marks itself good once it listens, not before.
            return try await Server.run(launch, arguments: Array(arguments.dropFirst()))
        case "version":
            launch.markGood()
            print(launch.version)
            return 0
        case nil:
            // A usage error is the caller's, not a sign of a bad build: mark the start good
            // so mistyped commands never count against a new build's tries.
            launch.markGood()
            printError(usage)
            return 64
        case let command?:
            launch.markGood()
            printError("Error: unknown command '\(command)'. \(usage)")
            return 64
        }
    }
}

/// Writes one line to stderr.
func printError(_ line: String) {
    var text = line + "\n"
    _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
}

/// Prints one line to stdout and flushes it: stdout is a pipe or a file under a service manager.
func printFlushed(_ line: String) {
    print(line)
    fflush(nil)
}
