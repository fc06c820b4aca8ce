@testable import SwitchbackCore
import SwitchbackFiles
import Testing

/// The one boundary for text from outside (issue 36): made safe by Unicode scalars, never
/// by `Character`s, where "\r\n" is one that equals neither "\r" nor "\n".
@Suite struct OutsideTextTests {
    @Test func aCRLFIsOneCharacterButTwoScalarsAndBecomesOneSpace() {
        let raw = "x\r\nverdict successful injected"
        #expect(raw.count == raw.unicodeScalars.count - 1, "Swift counts \"\\r\\n\" as one Character")
        #expect(!raw.contains(where: { $0 == "\n" }), "which is why a Character comparison misses it")
        #expect(OutsideText(raw).text == "x verdict successful injected")
        #expect(OutsideText("a\n\n\r\rb").text == "a b")
        #expect(OutsideText("tab\there").text == "tab here")
    }

    @Test func everyLineBreakTheUnicodeStandardKnowsBecomesASpace() {
        for scalar in ["\u{0B}", "\u{0C}", "\u{85}", "\u{2028}", "\u{2029}"] {
            #expect(OutsideText("a\(scalar)b").text == "a b", "\(scalar.unicodeScalars.first!.value)")
        }
    }

    @Test func otherControlsAreWrittenOutInert() {
        #expect(OutsideText("\u{1B}[31mred\u{1B}[0m").text == "\\u{1B}[31mred\\u{1B}[0m")
        #expect(OutsideText("\u{1B}]0;x\u{07}").text == "\\u{1B}]0;x\\u{07}", "an OSC title sequence")
        #expect(OutsideText("del\u{7F}").text == "del\\u{7F}")
        #expect(OutsideText("csi\u{9B}31m").text == "csi\\u{9B}31m", "C1's CSI")
        #expect(OutsideText("nul\u{0}").text == "nul\\u{00}")
        #expect(OutsideText("\u{202E}evil").text == "\\u{202E}evil", "a bidi override")
        let cleaned = OutsideText("\u{0}\u{1F}\u{7F}\u{80}\u{9F}\u{2028}\u{2029}\u{2066}").text
        #expect(cleaned.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }, "\(cleaned)")
    }

    @Test func printableTextPassesUnchanged() {
        for text in ["Prometheus at http://127.0.0.1:9090 refused the query (bad_data: parse error)", "Grüße, 日本語, emoji 🎉", ""] {
            #expect(OutsideText(text).text == text)
            #expect(!text.unicodeScalars.contains(where: OutsideText.isRefused))
        }
    }

    @Test func theLengthIsBoundedInScalars() {
        #expect(OutsideText(String(repeating: "a", count: 400)).text == String(repeating: "a", count: 300) + "...")
        #expect(OutsideText("abcdef", limit: 3).text == "abc...")
        #expect(OutsideText("\r\n\r\n", limit: 3).text == " ...", "a break's scalars count too")
    }

    @Test func bytesThatAreNotUTF8BecomeReplacementCharacters() {
        #expect(OutsideText(bytes: [0x61, 0xFF, 0x0D, 0x0A, 0x62]).text == "a\u{FFFD} b")
    }

    @Test func keepingLinesKeepsOnlyTheLineFeeds() {
        #expect(OutsideText.keepingLines("Status\n  reason: \u{1B}]0;x\u{07}\r\n") == "Status\n  reason: \\u{1B}]0;x\\u{07} \n")
        #expect(OutsideText.keepingLines("plain\ntext") == "plain\ntext")
    }
}

/// The framing of the supervisor ↔ analyzer channel: no payload can start a record.
@Suite struct AnalyzerFrameTests {
    func payloads(_ bytes: [UInt8]) throws(AnalyzerFrameReader.Malformed) -> [String] {
        var reader = AnalyzerFrameReader()
        reader.append(bytes)
        var out: [String] = []
        while let payload = try reader.next() { out.append(payload) }
        return out
    }

    @Test func aForgedVerdictInsideASentenceStaysInsideIt() throws {
        for injected in ["x\r\nverdict successful injected", "x\nverdict failed injected", "x\u{2028}verdict successful", "x\r12 verdict failed"] {
            let message = AnalyzerMessage.measurement(check: "errors", phase: "error", sentence: OutsideText(injected))
            let frames = try payloads(message.frame + AnalyzerMessage.verdict(word: "inconclusive", sentence: OutsideText("end")).frame)
            #expect(frames.count == 2, "\(frames)")
            let first = try #require(AnalyzerMessage(payload: frames[0]))
            guard case .measurement(let check, let phase, let sentence) = first else { Issue.record("\(first)"); continue }
            #expect(check == "errors" && phase == "error" && sentence.text.hasPrefix("x ") && sentence.text.contains("verdict"))
            #expect(AnalyzerMessage(payload: frames[1]) == .verdict(word: "inconclusive", sentence: OutsideText("end")))
        }
    }

    @Test func messagesRoundTrip() throws {
        let messages: [AnalyzerMessage] = [
            .measurement(check: "http", phase: "successful", sentence: OutsideText("http: 0 of 12 probes failed")),
            .verdict(word: "failed", sentence: OutsideText("errors: result[0] < 0.05 is false (0.31)")),
            .appFailures(7),
            .appBad(reason: OutsideText("schema mismatch")),
        ]
        let frames = try payloads(messages.flatMap(\.frame))
        #expect(frames.compactMap(AnalyzerMessage.init(payload:)) == messages)
        #expect(AnalyzerMessage.appFailures(3).frame == Array("14 app-failures 3\n".utf8))
    }

    @Test func aFrameInPiecesIsReadWhenWhole() throws {
        var reader = AnalyzerFrameReader()
        for byte in Array("9 verdict x\n".utf8).dropLast() {
            reader.append([byte])
            #expect(try reader.next() == nil)
        }
        reader.append([0x0A])
        #expect(try reader.next() == "verdict x")
    }

    @Test(arguments: [
        ("verdict successful\n", "does not start with its length and a space"),
        ("5 verdict successful\n", "is not followed by a line feed"),
        ("99999 x\n", "more than 16384"),
        ("123456", "more than 5 digits"),
        ("3 a\nb\n", "holds a line break"),
        ("3 a\rb\n", "holds a line break"),
    ])
    func aMalformedFrameIsRefusedAndBreaksTheStream(text: String, clause: String) throws {
        var reader = AnalyzerFrameReader()
        reader.append(Array(text.utf8))
        let error = #expect(throws: AnalyzerFrameReader.Malformed.self) { try reader.next() }
        #expect(error?.clause.contains(clause) == true, "\(error?.clause ?? "")")
        #expect(reader.isBroken)
        reader.append(Array("9 verdict x\n".utf8))
        #expect(try reader.next() == nil, "nothing after a malformed frame is read")
    }
}
