import Testing
@testable import SwitchbackCore

@Suite struct PersistedStateTests {
    let state = PersistedState(rollback: true, source: .remote, reason: "one line = two \\ three", changedAt: 42)

    @Test func roundTripsEveryField() throws {
        #expect(try PersistedState.parse(state.serialized(), path: "/s") == state)
        #expect(try PersistedState.parse(PersistedState.initial.serialized(), path: "/s") == .initial)
    }

    /// A reason read back is outside text: whoever wrote the file, it prints as one line with
    /// no escape sequence, so it cannot forge a line of `status` or `history`.
    @Test func aReasonReadBackIsOneLineWithNoControl() throws {
        let forged = PersistedState(rollback: true, source: .cli, reason: "x\r\n2026-11-27 12:00:00 UTC  switch  previous -> current  cli  \u{1B}[31mfake", changedAt: 42)
        let read = try PersistedState.parse(forged.serialized(), path: "/s")
        #expect(read.reason == "x 2026-11-27 12:00:00 UTC  switch  previous -> current  cli  \\u{1B}[31mfake")
        let event = SwitchHistoryEvent(time: 42, kind: .switch, from: .current, to: .previous, source: .cli, reason: "a\nb\u{7}")
        #expect(SwitchHistoryEvent(line: event.serialized().dropLast())?.reason == "a b\\u{07}")
    }

    @Test(arguments: [
        ("", SwitchbackError.Code.stateInvalid, "is empty"),
        ("format=1\nrollback=true\nsource=cli\n", .stateInvalid, "is truncated"),
        ("\u{7F}ELF\0\0garbage", .stateInvalid, "malformed line"),
        ("format=1\nrollback=maybe\nsource=cli\nend=ok\n", .stateInvalid, "no valid rollback line"),
        ("format=1\nrollback=true\nsource=someone\nend=ok\n", .stateInvalid, "no valid source line"),
        ("format=9\nsource=cli\nend=ok\n", .stateFromNewerFormat, "newer Switchback (format 9"),
    ])
    func damagedFilesThrowAClearError(text: String, code: SwitchbackError.Code, phrase: String) {
        #expect {
            try PersistedState.parse(Array(text.utf8), path: "/s/state")
        } throws: { error in
            guard let error = error as? SwitchbackError else { return false }
            return error.code == code && error.message.contains(phrase) && error.message.contains("/s/state")
        }
    }

    @Test func everyTruncationOfAValidFileIsDetected() {
        let bytes = state.serialized()
        for length in 0..<(bytes.count - 1) {
            #expect(throws: SwitchbackError.self) { try PersistedState.parse(Array(bytes.prefix(length)), path: "/s") }
        }
    }

    @Test func newerFormatKeepingTheRollbackKeyIsRead() throws {
        let text = "format=2\nrollback=true\nsource=auto\nnew_field=x\nend=ok\n"
        let parsed = try PersistedState.parse(Array(text.utf8), path: "/s")
        #expect(parsed.rollback && parsed.source == .auto)
    }

    @Test func nonUTF8IsInvalid() {
        #expect(throws: SwitchbackError.self) { try PersistedState.parse([0xFF, 0xFE, 0x3D], path: "/s") }
    }
}

@Suite struct SwitchHistoryEventTests {
    @Test func roundTripsAndSkipsTornLines() {
        let event = SwitchHistoryEvent(time: 7, kind: .switch, from: .current, to: .previous, source: .cli, reason: "a b = c \\ d")
        let line = event.serialized()
        #expect(SwitchHistoryEvent(line: line.dropLast()) == event)
        #expect(SwitchHistoryEvent(line: line.prefix(line.count / 2)) == nil)
        #expect(SwitchHistoryEvent(line: "garbage") == nil)
    }
}

@Suite struct ABIStampTests {
    @Test func ownStampIsCompatible() {
        #expect(ABIStamp.own.contractVersion >= 1)
        #expect(ABIStamp.own.incompatibility() == nil)
        #expect(ABIStamp(ABIStamp.own.description) == ABIStamp.own)
    }

    @Test func olderContractVersionsRunNewerDoNot() {
        let own = ABIStamp(contractVersion: 3, toolchain: "t")
        #expect(ABIStamp(contractVersion: 1, toolchain: "t").incompatibility(with: own) == nil)
        #expect(ABIStamp(contractVersion: 4, toolchain: "t").incompatibility(with: own)?.contains("contract version 4") == true)
        #expect(ABIStamp(contractVersion: 0, toolchain: "t").incompatibility(with: own) != nil)
    }

    @Test func anotherToolchainIsRefused() {
        let own = ABIStamp(contractVersion: 1, toolchain: "swift-a")
        #expect(ABIStamp(contractVersion: 1, toolchain: "swift-b").incompatibility(with: own)?.contains("another toolchain") == true)
    }

    @Test func garbageIsNotAStamp() {
        #expect(ABIStamp("hello") == nil)
        #expect(ABIStamp("switchback-abi/x toolchain/y") == nil)
    }
}

@Suite struct StateDirectoryTests {
    @Test func resolutionOrder() throws {
        let env: [String: String] = ["SWITCHBACK_STATE_DIR": "/a", "XDG_STATE_HOME": "/x", "HOME": "/h"]
        #expect(try StateDirectory.resolve(explicit: "/e", appID: "id") { env[$0] }.path == "/e")
        #expect(try StateDirectory.resolve(appID: "id") { env[$0] }.path == "/a")
        #expect(try StateDirectory.resolve(appID: "id") { ["XDG_STATE_HOME": "/x", "HOME": "/h"][$0] }.path == "/x/id")
        #expect(try StateDirectory.resolve(appID: "id") { ["HOME": "/h"][$0] }.path == "/h/.local/state/id")
        #expect(throws: SwitchbackError.self) { try StateDirectory.resolve(appID: "id") { _ in nil } }
    }
}

@Suite struct KeyValueTextTests {
    @Test func escapingIsReversible() {
        for value in ["", "plain", "a\nb", "tab\there", "back\\slash\\n", "\r\n\t\\"] {
            #expect(KeyValueText.unescape(KeyValueText.escape(value)) == value)
            #expect(!KeyValueText.escape(value).contains("\n"))
        }
    }

    @Test func parsedPairsReadAsTheFileHasThemAndDecodeOnlyWhenRead() throws {
        let file = "# comment\nformat=1\n\nname=a\\nb\nempty=\nname=second\ntab=x\ty\nlast=no newline"
        let text = try KeyValueText.parse(Array(file.utf8), describing: "test")
        #expect(text.count == 6)
        #expect(text.keys == ["format", "name", "empty", "name", "tab", "last"])
        #expect(text.values == ["1", "a\nb", "", "second", "x\ty", "no newline"])
        #expect(text["name"] == "a\nb")  // the first line of a key counts
        #expect(text.index(of: "name") == 1)
        #expect(text.index(of: "name", in: 2..<6) == 3)
        #expect(text.index(of: "name", in: 4..<6) == nil)
        #expect(text.index(of: "") == nil)
        #expect(text["nam"] == nil && text["names"] == nil && text["missing"] == nil)
        #expect(text.key(at: 4, is: "tab") && !text.key(at: 4, is: "ta") && !text.key(at: 4, is: "tabs"))
        #expect(text.withKeyBytes(at: 0) { Array($0) } == Array("format".utf8))

        // Pairs appended after a parse, and the serialized form, read back the same.
        var grown = text
        grown.append("added", "line\nbreak\\")
        #expect(grown.count == 7 && text.count == 6)
        #expect(grown["added"] == "line\nbreak\\")
        let again = try KeyValueText.parse(grown.serialized(), describing: "test")
        #expect(again == grown)
        #expect(again.keys == grown.keys && again.values == grown.values)
        #expect(again != text)
    }

    @Test func malformedLinesAreNamedByNumber() {
        for (file, line) in [("a=1\n=2\n", 2), ("a=1\n\n# c\nno equals\n", 4), ("x", 1)] {
            let error = #expect(throws: SwitchbackError.self) { try KeyValueText.parse(Array(file.utf8), describing: "The file f") }
            #expect(error?.message == "The file f has a malformed line \(line).")
            #expect(error?.code == .stateInvalid)
        }
        let error = #expect(throws: SwitchbackError.self) { try KeyValueText.parse([0x61, 0x3D, 0xFF], describing: "The file f") }
        #expect(error?.message == "The file f is not UTF-8 text.")
    }
}
