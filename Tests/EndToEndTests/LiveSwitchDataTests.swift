import Foundation
import Synchronization
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The stop-first switch (issues 28.1 and 30) through the real binaries, under load: release
/// 1.2.0 whose previous slot is 1.1.9 (the release fixture's `1.2.0-after-1.1.9`, both built
/// from these sources). 1.1.9 keeps the sample's notes in format 1 (notes.txt), 1.2.0 in
/// format 2 (notes.v2, its `notes-v2` step, reader floor 1.2.0); every response names the
/// build that answered and the format it reads (`X-Sample-Version`, `X-Sample-Notes-Format`).
@Suite(.serialized) struct LiveSwitchDataTests {
    static let newer = "1.2.0", older = "1.1.9"

    /// The bundle, supervised on a free port, with notes written by 1.1.9 and migrated to
    /// format 2 by 1.2.0's first supervised start (the data its previous build needs converted back).
    static func server(_ settings: [String: String] = [:], environment: [String: String] = [:],
                       prepare: (TestBundle) throws -> Void = { _ in }) throws -> (TestBundle, Int, SupervisedLauncher) {
        let t = try TestBundle(release: "1.2.0-after-1.1.9")
        try prepare(t)
        let port = try unusedLocalPort()
        try t.setManifestSetting("supervise", "true")
        try t.setManifestSetting("supervise.listen", "127.0.0.1:\(port)")
        for (key, value) in settings { try t.setManifestSetting(key, value) }
        for note in ["before one", "before two"] {
            let added = try t.launcher("note", "add", note, environment: ["SWITCHBACK_SLOT": "previous", "SWITCHBACK_SUPERVISE": "0"])
            try #require(added.status == 0, "\(added)")
        }
        let app = try SupervisedLauncher(t, ["serve", "--http", "127.0.0.1:\(port)"], environment: environment)
        try #require(waitUntil(seconds: 30) { NotesClient.get(port: port, path: "/notes").version == newer }, "\(app.stderr)")
        try #require(app.wait(upTo: 10) { app.record?.childReady == true })
        return (t, port, app)
    }

    @Test func aRollbackThatConvertsTheDataBackStopsFirstUnderLoadAndNoBuildReadsTheOthersFormat() throws {
        let (t, port, app) = try Self.server()
        defer { app.stop() }
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        let rollback = try t.rollbackctl("rollback", "--reason", "1.2.0 under test")
        #expect(rollback.status == 0, "\(rollback)")
        #expect(rollback.stdout.contains("Data: reverted migration step notes-v2 so that 1.1.9 can read it."), "\(rollback)")
        #expect(rollback.stdout.contains("Rolled back: the next start runs the previous slot (1.1.9)."), "\(rollback)")
        #expect(app.wait(upTo: 60) { app.record?.lastSwitch?.pausedMilliseconds != nil && app.record?.childReady == true }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().filter { $0.version == Self.older }.count > 20 })
        let responses = client.stop()
        let record = try #require(app.record?.lastSwitch)
        print("stop-first rollback: \(responses.count) requests, \(record.sentence)")

        try Self.checkNoBuildReadsTheOthersFormat(responses, first: Self.newer, then: Self.older, record: record)
        // Every note: written before the supervisor, and every one the load added.
        let listed = Set(NotesClient.get(port: port, path: "/notes").body.split(separator: "\n").map(String.init))
        let added = responses.compactMap { $0.added }
        #expect(listed.isSuperset(of: ["before one", "before two"] + added), "missing: \(Set(added).subtracting(listed))")
        #expect(added.count > 10)

        // The pause: measured, printed, recorded, shown.
        #expect(record.path == "stop-first" && record.from == .current && record.to == .previous)
        #expect(record.why == "the data (reader floor 1.2.0) must be converted back for 1.1.9")
        let paused = try #require(record.pausedMilliseconds)
        #expect(app.stderr.contains("; stop-first, 1.2.0 → 1.1.9: the data (reader floor 1.2.0) must be converted back for 1.1.9; paused \(paused) ms."), "\(app.stderr)")
        let status = try t.rollbackctl("status").stdout
        #expect(status.contains("Last switch: stop-first, 1.2.0 → 1.1.9: the data (reader floor 1.2.0) must be converted back for 1.1.9; paused \(paused) ms ("), "\(status)")
        let line = try #require(try t.history().last { $0.kind == "stop_first" })
        #expect(line.reason?.hasSuffix("paused \(paused) ms") == true, "\(line)")
        #expect(try t.status().supervisor?.lastSwitch?.pausedMilliseconds == paused)
        print("supervisor stderr:\n\(app.stderr)\nrollbackctl rollback:\n\(rollback.stdout)\nstatus:\n\(status)")
    }

    @Test func aTargetThatNeverBecomesReadyLeavesTheNewerBuildServingOnItsOwnFormatWithEveryNote() throws {
        let (t, port, app) = try Self.server(["supervise.start_deadline_ms": "3000"], environment: ["SAMPLE_HANG_AT_START": Self.older])
        defer { app.stop() }
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        let rollback = try t.rollbackctl("rollback")
        #expect(rollback.status == 0, "\(rollback)")
        #expect(app.wait(upTo: 60) { app.record?.switchFailure != nil && app.record?.childReady == true && app.record?.childSlot == .current }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 + 50 })
        let responses = client.stop()
        #expect(responses.allSatisfy { $0.refused == false }, "refused: \(responses.filter(\.refused).count)")
        let failed = responses.filter { $0.status != 200 }
        #expect(failed.isEmpty, "\(failed.prefix(5))")
        #expect(Set(responses.compactMap(\.version)) == [Self.newer], "only the newer build answered")
        #expect(responses.allSatisfy { $0.format == nil || $0.format == "2" })
        let listed = Set(NotesClient.get(port: port, path: "/notes").body.split(separator: "\n").map(String.init))
        let added = responses.compactMap { $0.added }
        #expect(listed.isSuperset(of: ["before one", "before two"] + added), "missing: \(Set(added).subtracting(listed))")
        let reason = "the switch to the previous slot (1.1.9) did not happen: it was not ready within 3 s; the current slot (1.2.0) serves again, on data in its own format"
        #expect(app.stderr.contains(HealthPolicy.capitalized(reason) + "."), "\(app.stderr)")
        #expect(try t.history().contains { $0.kind == "switch_failed" && $0.reason == reason })
        #expect(try t.rollbackctl("status").stdout.contains("Last switch: \(HealthPolicy.capitalized(reason)) ("))
        print("target never ready: \(responses.count) requests; supervisor stderr:\n\(app.stderr)")
    }

    // MARK: - Forward (issue 30): the target's pending steps decide

    @Test
    func aRollforwardToABuildThatMigratesStopsFirstUnderLoad() throws {
        let (t, port, app) = try Self.server()
        defer { app.stop() }
        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(app.wait(upTo: 60) { app.record?.childSlot == .previous && app.record?.childReady == true })
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        #expect(try t.rollbackctl("rollforward").status == 0)
        #expect(app.wait(upTo: 60) { app.record?.lastSwitch?.to == .current && app.record?.childReady == true }, "\(app.stderr)")
        #expect(waitUntil(seconds: 10) { client.responses().filter { $0.version == Self.newer }.count > 20 })
        let responses = client.stop()
        let record = try #require(app.record?.lastSwitch)
        #expect(record.why == "1.2.0 migrates notes-v2, which 1.1.9 cannot read")
        try Self.checkNoBuildReadsTheOthersFormat(responses, first: Self.older, then: Self.newer, record: record)
        let listed = Set(NotesClient.get(port: port, path: "/notes").body.split(separator: "\n").map(String.init))
        #expect(listed.isSuperset(of: ["before one", "before two"] + responses.compactMap { $0.added }))
    }

    @Test
    func aRollforwardWhoseMigrationFailsLeavesTheOlderBuildServingWithEveryNote() throws {
        let (t, port, app) = try Self.server()
        defer { app.stop() }
        #expect(try t.rollbackctl("rollback").status == 0)
        #expect(app.wait(upTo: 60) { app.record?.childSlot == .previous && app.record?.childReady == true })
        // From now on 1.2.0's notes-v2 fails (Sources/AppCore/SampleApp+Migrations.swift).
        try "\(Self.newer)\n".write(toFile: t.state + "/data/fail-migration", atomically: true, encoding: .utf8)
        let client = try NotesClient(port: port)
        #expect(waitUntil(seconds: 10) { client.responses().count > 20 })
        #expect(try t.rollbackctl("rollforward").status == 0)
        #expect(app.wait(upTo: 60) { app.record?.switchFailure != nil && app.record?.childSlot == .previous && app.record?.childReady == true }, "\(app.stderr)")
        let responses = client.stop()
        #expect(responses.allSatisfy { !$0.refused && $0.status == 200 && $0.version == Self.older && $0.format == "1" })
        let listed = Set(NotesClient.get(port: port, path: "/notes").body.split(separator: "\n").map(String.init))
        #expect(listed.isSuperset(of: ["before one", "before two"] + responses.compactMap { $0.added }))
    }

    /// 0 refused, 0 failed; each build answers in its own format; the `first` build answers
    /// nothing sent after its last child was gone (the conversion began), the `then` build
    /// nothing before the target started (a conversion back ended; a forward one runs in the
    /// target before it serves); and never the other way round.
    static func checkNoBuildReadsTheOthersFormat(_ responses: [NotesClient.Response], first: String, then: String,
                                                 record: SupervisorRecord.LastSwitch) throws {
        #expect(responses.filter(\.refused).isEmpty, "refused: \(responses.filter(\.refused).count)")
        let failed = responses.filter { !$0.refused && $0.status != 200 }
        #expect(failed.isEmpty, "failed: \(failed.count): \(failed.prefix(5))")
        for response in responses where response.status == 200 {
            #expect(response.format == NotesStoreFormat.of(response.version ?? ""), "\(response)")
        }
        let stopped = try #require(record.stoppedAtMilliseconds)
        let started = try #require(record.targetStartedAtMilliseconds)
        let late = responses.filter { $0.version == first && $0.sentAt >= stopped }
        #expect(late.isEmpty, "\(first) answered requests sent after the conversion began: \(late.prefix(3))")
        let early = responses.filter { $0.version == then && $0.receivedAt < started }
        #expect(early.isEmpty, "\(then) answered before the conversion ended: \(early.prefix(3))")
        if let switchedAt = responses.firstIndex(where: { $0.version == then }) {
            #expect(!responses[switchedAt...].contains { $0.version == first }, "the builds' answers interleave")
        }
        #expect(responses.contains { $0.version == first } && responses.contains { $0.version == then })
    }
}

/// The format each build of the sample reads: 1 below 1.2.0 (as `NotesStore.format(forVersion:)`).
enum NotesStoreFormat {
    static func of(_ version: String) -> String { version == "1.1.9" ? "1" : "2" }
}

/// A client that writes and reads the sample's notes through a switch: on its own thread, a
/// request every 3 ms (each on a new connection, with a 60 s timeout, since connections wait
/// in the queue while no child serves), alternately `GET /notes/add?text=...` and
/// `GET /notes`, recording when each was sent and answered (Unix milliseconds) and which build
/// and notes format answered.
final class NotesClient: Sendable {
    struct Response: Sendable, CustomStringConvertible {
        var sentAt: Int64
        var receivedAt: Int64
        var refused = false
        var status = 0
        var version: String?
        var format: String?
        var body = ""
        /// The note this request added, when it was an add that succeeded.
        var added: String?

        var description: String { "\(version ?? "-")/\(format ?? "-") \(status)\(refused ? " refused" : "") sent \(sentAt) received \(receivedAt): \(body.prefix(80))" }
    }

    let port: Int
    private let state = Mutex<(responses: [Response], stopped: Bool, done: Bool)>(([], false, false))

    init(port: Int) throws {
        self.port = port
        let thread = Thread { [self] in run() }
        thread.start()
    }

    func responses() -> [Response] { state.withLock { $0.responses } }

    /// Stops the thread (after its request in flight) and returns every response.
    func stop() -> [Response] {
        state.withLock { $0.stopped = true }
        _ = waitUntil(seconds: 90) { state.withLock { $0.done } }
        return responses()
    }

    private func run() {
        var index = 0
        while !state.withLock({ $0.stopped }) && index < 200_000 {
            let text = "load-\(index)"
            var response = Self.get(port: port, path: index % 2 == 0 ? "/notes/add?text=\(text)" : "/notes")
            if index % 2 == 0, response.status == 200 { response.added = text }
            state.withLock { $0.responses.append(response) }
            index += 1
            usleep(3000)
        }
        state.withLock { $0.done = true }
    }

    static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// connect(2) of `fd` to 127.0.0.1:`port`: 0, or -1 with errno.
    static func connectLoopback(_ fd: Int32, port: Int) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// One request on a new connection; `whenConnected` runs once the connection is made and
    /// before the request is sent.
    static func get(port: Int, path: String, whenConnected: () -> Void = {}) -> Response {
        let sentAt = nowMilliseconds()
        var response = Response(sentAt: sentAt, receivedAt: sentAt)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return response }
        defer { close(fd) }
        var limit = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        if connectLoopback(fd, port: port) != 0 {
            response.refused = errno == ECONNREFUSED
            response.body = "connect: \(String(cString: strerror(errno)))"
            response.receivedAt = nowMilliseconds()
            return response
        }
        whenConnected()
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        _ = request.withUTF8 { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        response.receivedAt = nowMilliseconds()
        let text = String(decoding: bytes, as: UTF8.self)
        guard let headEnd = text.range(of: "\r\n\r\n") else {
            response.body = "no whole response (\(bytes.count) bytes)"
            return response
        }
        let head = text[..<headEnd.lowerBound].split(separator: "\r\n")
        response.body = String(text[headEnd.upperBound...])
        response.status = head.first.flatMap { $0.split(separator: " ").dropFirst().first.flatMap { Int($0) } } ?? 0
        for line in head.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            if parts[0] == "X-Sample-Version" { response.version = parts[1] }
            if parts[0] == "X-Sample-Notes-Format" { response.format = parts[1] }
        }
        return response
    }
}
