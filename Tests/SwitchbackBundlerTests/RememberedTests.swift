import Foundation
@testable import SwitchbackBundler
import Testing

/// What the bundler remembers between releases is asked again when its key changes, and
/// only then.
@Suite struct RememberedTests {
    @Test func theSameKeyAnswersFromTheRecordAndAnotherKeyAsksAgain() throws {
        let record = NSTemporaryDirectory() + "/remembered-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: record) }
        var asked = 0
        func ask(_ answer: String) -> () throws(BundlerError) -> String { { () throws(BundlerError) in asked += 1; return answer } }
        #expect(try Remembered.answer(at: record, key: "a\nb", ask("first\nlines")) == "first\nlines")
        #expect(try Remembered.answer(at: record, key: "a\nb", ask("second")) == "first\nlines")
        #expect(asked == 1)
        #expect(try Remembered.answer(at: record, key: "c", ask("third")) == "third")
        #expect(asked == 2)
    }

    @Test func aFileIdentityChangesWithItsContents() throws {
        let path = NSTemporaryDirectory() + "/identity-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(Remembered.identity(of: path).hasSuffix(" missing"))
        try "one".write(toFile: path, atomically: true, encoding: .utf8)
        let first = Remembered.identity(of: path)
        try "two, longer".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(Remembered.identity(of: path) != first)
    }
}
