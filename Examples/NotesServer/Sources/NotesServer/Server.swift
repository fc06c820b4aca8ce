#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import NIOCore
import Switchback
import Synchronization

/// `serve [--host ADDRESS] [--port N]`: the HTTP server, on 127.0.0.1 unless `--host` says
/// otherwise (`0.0.0.0` in a container, so that a published port or a Service reaches it).
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
        guard case let (host, port)? = listenAddress(arguments) else {
            launch.markGood()  // a usage error, not a bad build
            printError("Error: usage: serve [--host ADDRESS] [--port N] (ADDRESS: default 127.0.0.1, 0.0.0.0 for every interface; N from 0 to 65535, default $PORT, else 8080)")
            return 64
        }
        // An IPv6 address in brackets in the lines that print it with its port.
        let shownHost = host.contains(":") ? "[\(host)]" : host
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
                printFlushed("NotesServer \(launch.version) listening on \(shownHost):\(channel.localAddress?.port ?? port)")
            }
        )
        do {
            try await app.runService()
        } catch where !listening.load(ordering: .relaxed) {
            // Most often the port is taken, or --host names an address this machine does not
            // have. Not marked good: the launcher counts a failed start.
            printError("Error: NotesServer cannot listen on \(shownHost):\(port): \(error)")
            return 1
        }
        printFlushed("NotesServer \(launch.version) stopped")
        return 0
    }

    /// The address to listen on: `--host ADDRESS` (an IP address or a name that resolves to one
    /// of this machine's), else 127.0.0.1; `--port N`, else `$PORT`, else 8080. Either option at
    /// most once, in any order. Nil when malformed. An address the machine does not have is not
    /// a usage error: the bind fails, and the start with it, as when the port is taken.
    static func listenAddress(_ arguments: [String]) -> (host: String, port: Int)? {
        var host: String?
        var portText: String?
        var rest = arguments[...]
        while let option = rest.popFirst() {
            guard let value = rest.popFirst(), !value.isEmpty else { return nil }
            switch option {
            case "--host" where host == nil: host = value
            case "--port" where portText == nil: portText = value
            default: return nil
            }
        }
        let text = portText ?? getenv("PORT").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "8080"
        guard let port = Int(text), (0...65535).contains(port) else { return nil }
        return (host ?? "127.0.0.1", port)
    }
}
