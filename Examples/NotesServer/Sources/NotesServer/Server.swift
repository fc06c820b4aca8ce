#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import NIOCore
import Switchback
import Synchronization

/// `serve [--port N]`: the HTTP server, on 127.0.0.1.
///
///     GET  /         "NotesServer 1.0.0 (current slot)"  (slot "none" without the launcher)
///     GET  /version  "1.0.0"
///     GET  /notes    the notes, one a line
///     POST /notes    appends the request's body as a note: 201
///
/// It marks the start good once it listens, and stops gracefully on SIGTERM or SIGINT
/// (Hummingbird's runService: a ServiceGroup with those graceful shutdown signals), exit 0.
enum Server {
    /// The largest note accepted.
    static let maxNoteBytes = 64 * 1024

    static func run(_ launch: LaunchInfo, arguments: [String]) async throws -> Int32 {
        guard let port = port(arguments) else {
            launch.markGood()  // a usage error, not a bad build
            printError("Error: usage: serve [--port N] (N from 0 to 65535; default $PORT, else 8080)")
            return 64
        }
        let host = "127.0.0.1"
        let store = NotesStore(directory: launch.dataDirectory)
        // Appends from this process, one at a time; the data lock (shared) keeps a rollback's
        // downgrade, which takes it exclusively, from converting the notes under a write.
        let writes = Mutex(())
        let greeting = "NotesServer \(launch.version) (\(launch.slot?.rawValue ?? "none") slot)\n"

        let router = Router()
        router.get("/") { _, _ in greeting }
        router.get("/version") { _, _ in launch.version + "\n" }
        router.get("/notes") { _, _ in
            await launch.withDataLock { store.list() }.map { $0 + "\n" }.joined()
        }
        router.post("/notes") { request, _ -> EditedResponse<String> in
            var text = String(buffer: try await request.body.collect(upTo: maxNoteBytes))
            while text.last?.isNewline == true { text.removeLast() }
            guard !text.isEmpty else { throw HTTPError(.badRequest, message: "Send the note as the request's body.") }
            do {
                // The async form waits for the lock without blocking a thread of the pool.
                try await launch.withDataLock {
                    try writes.withLock { _ throws(NotesError) in try store.add(text) }
                }
            } catch {
                throw HTTPError(.serviceUnavailable, message: "\(error)")
            }
            return EditedResponse(status: .created, response: "stored\n")
        }

        let listening = Atomic(false)
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "NotesServer"),
            onServerRunning: { channel in
                // Listening: this start is healthy (automatic rollback stops watching it).
                launch.markGood()
                listening.store(true, ordering: .relaxed)
                printFlushed("NotesServer \(launch.version) listening on \(host):\(channel.localAddress?.port ?? port)")
            }
        )
        do {
            try await app.runService()
        } catch where !listening.load(ordering: .relaxed) {
            // Most often the port is taken. Not marked good: the launcher counts a failed start.
            printError("Error: NotesServer cannot listen on \(host):\(port): \(error)")
            return 1
        }
        printFlushed("NotesServer \(launch.version) stopped")
        return 0
    }

    /// `--port N`, else `$PORT`, else 8080; nil when malformed.
    static func port(_ arguments: [String]) -> Int? {
        let text: String
        switch arguments.count {
        case 0: text = getenv("PORT").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "8080"
        case 2 where arguments[0] == "--port": text = arguments[1]
        default: return nil
        }
        guard let port = Int(text), (0...65535).contains(port) else { return nil }
        return port
    }
}
