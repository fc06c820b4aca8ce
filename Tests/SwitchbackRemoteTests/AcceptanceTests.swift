import Foundation
import Testing
import SwitchbackCrypto
@testable import SwitchbackRemote

/// The happy paths against real servers on 127.0.0.1: python3's own `http.server` (a
/// static host with Last-Modified) and the test server's ETag file route.
@Suite("Sync against a static web server")
struct AcceptanceTests {
    @Test func rollbackThenRollForwardAreAppliedAndA304IsUnchanged() async throws {
        try await withTemporaryDirectory { root in
            let file = root.appendingPathComponent("directive.json")
            try await withStaticServer(root: root) { server in
                let url = server.url("/directive.json")

                // 1. The operator publishes a rollback for the bad 2.3.0.
                let rollback = TestFixtures.directive(serial: 1, decision: .runPrevious)
                try TestFixtures.signed(rollback).write(to: file)
                // Published an hour ago: validators of a file modified within 2 s of the answer
                // are not kept (ConditionalHeaders.areTrustworthy), so there would be no 304.
                try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: file.path)
                let first = await sync(url: url, trust: TestFixtures.trust, context: TestFixtures.context())
                #expect(first.outcome == .applied(rollback))
                #expect(first.isSuccessfulCheck)
                #expect(first.description == "Applied directive serial 1: run the previous slot (reason: 2.3.0 corrupts notes on save).")
                #expect(first.conditional.lastModified != nil)
                #expect(first.conditional.url == url.absoluteString)
                #expect(first.checkedAt == TestFixtures.now)

                // 2. Nothing changed: the static server answers 304 to If-Modified-Since.
                let second = await sync(url: url, trust: TestFixtures.trust, context: TestFixtures.context(lastAcceptedSerial: 1), conditional: first.conditional)
                #expect(second.outcome == .unchanged(serial: nil))
                #expect(second.isSuccessfulCheck)
                #expect(second.description.contains("304"))

                // 3. The operator rolls forward with a higher serial (a later mtime, as a real edit would have).
                let rollForward = TestFixtures.directive(serial: 2, decision: .runCurrent, reason: "2.3.0 was fine; the bug was in the storage backend")
                try TestFixtures.signed(rollForward).write(to: file)
                try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: file.path)
                let third = await sync(url: url, trust: TestFixtures.trust, context: TestFixtures.context(lastAcceptedSerial: 1), conditional: second.conditional)
                #expect(third.outcome == .applied(rollForward))
                #expect(third.description.hasPrefix("Applied directive serial 2: run the current slot"))
            }
        }
    }

    @Test func etagIsSentBackAndA304IsUnchanged() async throws {
        try await withTemporaryDirectory { root in
            let file = root.appendingPathComponent("directive.json")
            try TestFixtures.signed(TestFixtures.directive(serial: 7)).write(to: file)
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: file.path)
            try await withHostileServer(root: root) { server in
                let url = server.url("/files/directive.json")
                let first = await sync(url: url, trust: TestFixtures.trust, context: TestFixtures.context())
                #expect(first.outcome.appliedDirective?.serial == 7)
                let etag = try #require(first.conditional.etag)
                #expect(etag.hasPrefix("\""))

                let second = await sync(url: url, trust: TestFixtures.trust, context: TestFixtures.context(lastAcceptedSerial: 7), conditional: first.conditional)
                #expect(second.outcome == .unchanged(serial: nil))
                #expect(second.conditional.etag == etag)
            }
        }
    }

    @Test func validatorsAreNotSentAfterAnUpgrade() async throws {
        // After the current slot changes version, the directive is judged again, not 304'd.
        try await withTemporaryDirectory { root in
            try TestFixtures.signed(TestFixtures.directive(serial: 7)).write(to: root.appendingPathComponent("directive.json"))
            try await withHostileServer(root: root) { server in
                let url = server.url("/files/directive.json")
                let first = await sync(url: url, trust: TestFixtures.trust, context: TestFixtures.context())
                let upgraded = await sync(url: url, trust: TestFixtures.trust,
                                          context: TestFixtures.context(version: TestFixtures.fixedVersion, lastAcceptedSerial: 7),
                                          conditional: first.conditional)
                #expect(upgraded.outcome.notApplicableCode == .versionMismatch)
            }
        }
    }

    @Test func sameSerialServedAgainIsUnchanged() async throws {
        try await withTemporaryDirectory { root in
            try TestFixtures.signed(TestFixtures.directive(serial: 3)).write(to: root.appendingPathComponent("directive.json"))
            try await withHostileServer(root: root) { server in
                let result = await sync(url: server.url("/files/directive.json"), trust: TestFixtures.trust, context: TestFixtures.context(lastAcceptedSerial: 3))
                #expect(result.outcome == .unchanged(serial: 3))
                #expect(result.isSuccessfulCheck)
                #expect(result.description == "Directive serial 3 is the one already applied; the decision stays.")
            }
        }
    }

    @Test func refusedDirectiveDoesNotStoreValidators() async throws {
        try await withTemporaryDirectory { root in
            try TestFixtures.signed(TestFixtures.directive(serial: 3), by: TestFixtures.strangerKey).write(to: root.appendingPathComponent("directive.json"))
            try await withHostileServer(root: root) { server in
                let result = await sync(url: server.url("/files/directive.json"), trust: TestFixtures.trust, context: TestFixtures.context())
                #expect(result.outcome.refusalCode == .untrustedKey)
                #expect(result.conditional == .none)
            }
        }
    }

    @Test func plainHTTPToAnotherHostIsRefusedWithoutConnecting() async throws {
        let (result, elapsed) = await timedSync(URL(string: "http://directives.example.com/notes.json")!)
        #expect(result.outcome.refusalCode == .insecureURL)
        #expect(result.description == "Refused to fetch http://directives.example.com/notes.json: plain http is only allowed to loopback; use https or allow insecure http in the manifest.")
        #expect(elapsed < .seconds(2))  // refused before any connection; room for a loaded machine
    }

    @Test func unsupportedSchemeIsRefused() async {
        let (result, _) = await timedSync(URL(string: "file:///etc/passwd")!)
        #expect(result.outcome.refusalCode == .unsupportedScheme)
        expectOneSentence(result.description)
    }

    @Test(arguments: ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]", "::ffff:127.0.0.1"])
    func loopbackHostsAreLoopback(host: String) {
        #expect(URLPolicy.isLoopback(host: host))
    }

    @Test(arguments: ["128.0.0.1", "10.0.0.1", "example.com", "localhost.example.com", "::2", "", "127.0.0.1.nip.io"])
    func otherHostsAreNotLoopback(host: String) {
        #expect(!URLPolicy.isLoopback(host: host))
    }

    @Test func insecureHTTPCanBeAllowedByTheManifest() {
        let url = URL(string: "http://10.0.0.5/notes.json")!
        #expect(URLPolicy.refusal(for: url, allowInsecureHTTP: false)?.refusalCode == .insecureURL)
        #expect(URLPolicy.refusal(for: url, allowInsecureHTTP: true) == nil)
        #expect(URLPolicy.refusal(for: URL(string: "https://example.com/x.json")!, allowInsecureHTTP: false) == nil)
    }

    @Test func validatorsOfAFileJustWrittenAreNotKept() async throws {
        // nginx-style validators (mtime to the second) cannot tell a same-size file replaced
        // within the same second: the next check must not be conditional.
        try await withTemporaryDirectory { root in
            let file = root.appendingPathComponent("directive.json")
            try TestFixtures.signed(TestFixtures.directive(serial: 7)).write(to: file)
            try await withHostileServer(root: root) { server in
                try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file.path)
                let first = await sync(url: server.url("/files/directive.json"), trust: TestFixtures.trust, context: TestFixtures.context())
                #expect(first.outcome.appliedDirective?.serial == 7)
                #expect(first.conditional == .none)
                #expect(first.authentic == AuthenticDirective(serial: 7, expiresAt: Int64(TestFixtures.directive(serial: 7).expiresAt.timeIntervalSince1970)))
                #expect(first.provesFreshness)
            }
        }
    }
}
