#if canImport(Glibc)
import Glibc
#endif
import Switchback

// The whole glue between this library and the launcher.
@_cdecl("switchback_register") public func switchbackRegister() { Switchback.register(AdoptedApp.self) }

/// A tiny notes server: `GET /` answers "AdoptedApp VERSION", `GET /notes` lists the notes,
/// `POST /notes` stores the request body as a note. It listens on 127.0.0.1:PORT (`--port N`,
/// else `$PORT`), marks the start good once it listens, and exits 0 on SIGTERM or SIGINT.
/// What differs between releases (the notes' format, the migration, the start-up) is in
/// Release.swift.
public enum AdoptedApp: SwitchbackApp {
    public static func migrations(_ migrator: inout Migrator, launch: LaunchInfo) throws {
        try Release.migrations(&migrator, launch: launch)
    }

    public static func main(_ launch: LaunchInfo) throws -> Int32 {
        guard let port = port(launch.arguments) else {
            log("Error: usage: AdoptedApp --port N (or PORT=N in the environment)")
            return 64
        }
        // SIGTERM and SIGINT are taken synchronously, between accepts.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        Release.beforeServing(launch)
        let server: HTTPServer
        do { server = try HTTPServer(port: port) } catch {
            log("Error: AdoptedApp \(launch.version) cannot listen on 127.0.0.1:\(port): \(error)")
            return 1
        }
        launch.markGood()
        log("AdoptedApp \(launch.version) (\(launch.slot?.rawValue ?? "no") slot) listening on 127.0.0.1:\(port), pid \(getpid())")
        let notes = NotesStore(directory: launch.dataDirectory)
        while true {
            var timeout = timespec(tv_sec: 0, tv_nsec: 0)
            let signal = sigtimedwait(&signals, nil, &timeout)
            if signal == SIGTERM || signal == SIGINT {
                log("AdoptedApp \(launch.version) stopping on signal \(signal)")
                return 0
            }
            server.serveOne(waitingMilliseconds: 100) { request in
                respond(to: request, launch: launch, notes: notes)
            }
        }
    }

    static func respond(to request: HTTPRequest, launch: LaunchInfo, notes: NotesStore) -> HTTPResponse {
        switch (request.method, request.path) {
        case ("GET", "/"):
            return HTTPResponse(status: 200, body: "AdoptedApp \(launch.version)\n")
        case ("GET", "/notes"):
            guard let list = launch.withDataLock({ notes.list() }) else {
                return HTTPResponse(status: 500, body: "cannot read the notes\n")
            }
            return HTTPResponse(status: 200, body: list.map { $0 + "\n" }.joined())
        case ("POST", "/notes"):
            let text = request.body.trimmingCharacters(in: ["\r\n", "\n", "\r", " "])
            guard !text.isEmpty else { return HTTPResponse(status: 400, body: "an empty note\n") }
            guard launch.withDataLock({ notes.add(text) }) else {
                return HTTPResponse(status: 500, body: "cannot store the note\n")
            }
            return HTTPResponse(status: 201, body: "stored\n")
        case (_, "/"), (_, "/notes"):
            return HTTPResponse(status: 405, body: "method not allowed\n")
        default:
            return HTTPResponse(status: 404, body: "not found\n")
        }
    }

    static func port(_ arguments: [String]) -> UInt16? {
        if arguments.count == 2, arguments[0] == "--port" { return UInt16(arguments[1]) }
        guard arguments.isEmpty, let value = getenv("PORT") else { return nil }
        return UInt16(String(cString: value))
    }
}

/// One line on stderr.
func log(_ line: String) {
    var text = line + "\n"
    _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
}

extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        var text = Substring(self)
        while let last = text.last, set.contains(last) { text.removeLast() }
        while let first = text.first, set.contains(first) { text.removeFirst() }
        return String(text)
    }
}
