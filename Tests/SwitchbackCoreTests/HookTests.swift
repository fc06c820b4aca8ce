import Foundation
@testable import SwitchbackCore
import Testing

/// The hooks' settings, payload and queue (docs/hooks.md), without a deliverer.
@Suite struct HookTests {
    @Test func noHookNoSettings() throws {
        #expect(try HookSettings.parse([:]) == nil)
        #expect(try HookSettings.parse(["hooks.command": "", "remote.url": "x"]) == nil, "an empty value is an absent key")
    }

    @Test func readsACommandAndASignedWebhook() throws {
        let hooks = try #require(try HookSettings.parse([
            "hooks.command": "/usr/local/bin/page-oncall", "hooks.url": "https://hooks.example.com/switchback",
            "hooks.secret_file": "/etc/switchback/hook.key", "hooks.timeout_ms": "2500", "hooks.retries": "0",
        ]))
        #expect(hooks == HookSettings(command: "/usr/local/bin/page-oncall", url: "https://hooks.example.com/switchback",
                                      secretFile: "/etc/switchback/hook.key", timeoutMilliseconds: 2500, retries: 0))
        let defaults = try #require(try HookSettings.parse(["hooks.url": "http://127.0.0.1:9/h", "hooks.secret_file": "/k"]))
        #expect(defaults.timeoutMilliseconds == 5000 && defaults.retries == 3 && defaults.command == nil)
    }

    @Test(arguments: [
        (["hooks.comand": "/x"], "hooks.comand is not a hook setting; write hooks.command, hooks.url, hooks.secret_file, hooks.timeout_ms, hooks.retries, hooks.allow_insecure_http."),
        (["hooks.retries": "2"], "hooks.retries is set, but neither hooks.command nor hooks.url is; name the program or the URL the events go to."),
        (["hooks.command": "page-oncall"], "hooks.command is 'page-oncall'; write the absolute path of a program (it gets each event as JSON on its stdin, with no arguments)."),
        (["hooks.url": "https://hooks.example.com/s"], "hooks.url is set without hooks.secret_file; name the file holding the key the events are signed with (HMAC-SHA256), so that the receiver can tell them from forgeries."),
        (["hooks.url": "ftp://x/y", "hooks.secret_file": "/k"], "hooks.url is 'ftp://x/y'; write an http:// or https:// URL without spaces, e.g. https://hooks.example.com/switchback."),
        (["hooks.url": "http://10.0.0.5/hook", "hooks.secret_file": "/k"], "hooks.url is http://10.0.0.5/hook, plain http to a host other than loopback, where anything on the path could read the events; use https, or set hooks.allow_insecure_http=true to accept that."),
        (["hooks.command": "/x", "hooks.secret_file": "/k"], "hooks.secret_file is set without hooks.url; the key signs webhooks only (a command hook runs on this host)."),
        (["hooks.command": "/x", "hooks.timeout_ms": "50"], "hooks.timeout_ms is '50'; write a whole number from 100 to 60000."),
        (["hooks.command": "/x", "hooks.retries": "11"], "hooks.retries is '11'; write a whole number from 0 to 10."),
    ] as [([String: String], String)])
    func refusesSettingsWithOneSentence(settings: [String: String], sentence: String) {
        let error = #expect(throws: SwitchbackError.self) { try HookSettings.parse(settings) }
        #expect(error?.code == .manifestInvalid)
        #expect(error?.message == sentence)
    }

    @Test func plainHTTPToAnotherHostNeedsTheExplicitSetting() throws {
        let hooks = try HookSettings.parse(["hooks.url": "http://10.0.0.5/hook", "hooks.secret_file": "/k", "hooks.allow_insecure_http": "true"])
        #expect(hooks?.allowsInsecureHTTP == true)
    }

    @Test func theBackoffGrowsAndIsCapped() {
        #expect((1...7).map { HookSettings.backoffMilliseconds(attempt: $0) } == [1000, 2000, 4000, 8000, 16000, 30000, 30000])
    }

    @Test func thePayloadIsOneJSONLineWithEveryField() throws {
        let event = SwitchHistoryEvent(time: 1_795_906_267, kind: .switch, from: .current, to: .previous, source: .cli,
                                       reason: "notes \"corrupted\"\n\u{1B}[31m\u{2028}")
        let hook = HookEvent(id: "0123456789abcdef0123456789abcdef", event: event, appID: "dev.switchback.sample",
                             install: "83aae71a700150068f4a8a1d2b3c4d5e", version: "1.2.0", host: "web-3")
        #expect(hook.json == #"{"v":1,"id":"0123456789abcdef0123456789abcdef","kind":"switch","time":"2026-11-28T22:51:07Z","time_unix":1795906267,"app_id":"dev.switchback.sample","install":"83aae71a700150068f4a8a1d2b3c4d5e","from":"current","to":"previous","version":"1.2.0","source":"cli","reason":"notes \"corrupted\"\n\u001b[31m\u2028","host":"web-3"}"#)
        let decoded = try JSONSerialization.jsonObject(with: Data(hook.json.utf8)) as? [String: Any]
        #expect(decoded?["reason"] as? String == "notes \"corrupted\"\n\u{1B}[31m\u{2028}", "a JSON parser reads the reason back")
        let ids = Set((0..<100).map { _ in HookEvent.newID() })
        #expect(ids.count == 100 && ids.allSatisfy { $0.utf8.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }

    @Test func theQueueKeepsTheOrderAndCountsWhatItDrops() throws {
        let path = NSTemporaryDirectory() + "switchback-hooks-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let queue = HookQueue(directory: StateDirectory(path: path))
        let events = (0..<3).map { index in
            HookEvent(id: String(repeating: String(index), count: 32), event: SwitchHistoryEvent(time: 1_795_906_267 + Int64(index), kind: .switch, from: .current, to: .previous, source: .cli, reason: "r"),
                      appID: "a", install: "i", version: "1", host: "h")
        }
        for event in events { #expect(queue.enqueue(event) == nil) }
        let pending = queue.pending()
        #expect(pending.map { String($0.dropLast(5).suffix(32)) } == events.map(\.id), "oldest first")
        #expect(queue.read(pending[0]) == Array((events[0].json + "\n").utf8))
        queue.remove(pending[0])
        #expect(queue.pending().count == 2)
        // Full: the event is not queued, and counted.
        for index in 0..<(HookQueue.limit - 2) {
            FileManager.default.createFile(atPath: queue.queuePath + "/\(index).json", contents: Data())
        }
        #expect(queue.enqueue(events[0]) == "the hook queue \(queue.queuePath) already holds 1000 events; event \(events[0].id) was dropped.")
        #expect(queue.dropped == 1 && queue.pending().count == HookQueue.limit)
    }
}
