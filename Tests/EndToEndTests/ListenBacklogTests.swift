import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The shared listening socket keeps the supervisor's backlog whatever the app asks: the
/// sample's `serve --http` binds the supervised address itself and calls `listen(fd, 128)`,
/// which the launcher's `listen` leaves alone (CSwitchbackListen), so a pause cannot overflow
/// a queue shrunk to 128 (docs/supervise.md, "A server that binds its own port").
@Suite(.serialized) struct ListenBacklogTests {
    /// The backlog `ss` shows for the socket listening on 127.0.0.1:`port` (its Send-Q).
    static func backlog(_ port: Int) throws -> Int {
        let result = try runProcess("/usr/bin/ss", ["-ltnH", "sport = :\(port)"])
        let lines = result.stdout.split(separator: "\n").filter { $0.hasPrefix("LISTEN") }
        let line = try #require(lines.first, "ss shows no socket listening on port \(port): \(result)")
        #expect(lines.count == 1, "one listening socket on port \(port), shared by the supervisor and its child: \(result)")
        let columns = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        return try #require(Int(columns[2]), "ss: \(line)")
    }

    /// What `listen(fd, SOMAXCONN)` gives on this host: the kernel caps it at net.core.somaxconn.
    static var supervisorBacklog: Int {
        let limit = (try? String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? Int(SOMAXCONN)
        return min(Int(SOMAXCONN), limit)
    }

    @Test func theAppsListenDoesNotShrinkTheSharedQueueBeforeOrAfterASwitch() throws {
        let (t, port) = try LiveSwitchTests.server()
        let app = try LiveSwitchTests.serve(t, port)
        defer { app.stop() }
        #expect(waitUntil(seconds: 30) { LiveSwitchTests.version(port) == t.currentVersion }, "\(app.stderr)")
        #expect(Self.supervisorBacklog > 128, "a backlog of 128 could not tell the app's listen from the supervisor's")
        #expect(try Self.backlog(port) == Self.supervisorBacklog, "the child's listen(fd, 128) left the supervisor's backlog")
        // The new child binds and listens again on the same socket: still the supervisor's.
        let result = try t.rollbackctl("rollback")
        #expect(result.status == 0, "\(result)")
        #expect(waitUntil(seconds: 30) { LiveSwitchTests.version(port) == t.previousVersion }, "\(app.stderr)")
        #expect(try Self.backlog(port) == Self.supervisorBacklog, "after the switch")
    }
}
