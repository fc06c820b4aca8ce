import AppVersions
import SwitchbackTestSupport
import Foundation
import Synchronization
import Testing

/// A clock that tests move by hand.
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSinceReferenceDate: 700_000_000))

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval = 60) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// A closure reading this clock, for the `now:` parameters.
    var reader: @Sendable () -> Date { { [self] in self.now } }
}

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        var template = Array((NSTemporaryDirectory() + "/appversions-test-XXXXXX").utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }

    func write(_ text: String, to name: String) throws {
        try text.write(toFile: file(name), atomically: false, encoding: .utf8)
    }
}

/// A deterministic generator, so a failing randomised test can be replayed from its seed.
typealias SeededGenerator = SwitchbackTestSupport.SeededGenerator

/// A step body's error for tests.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Collects step names as they run, from closures that must be Sendable-agnostic.
final class Journal: @unchecked Sendable {
    private let lock = NSLock()
    private var names: [String] = []

    func append(_ name: String) {
        lock.lock()
        names.append(name)
        lock.unlock()
    }

    var entries: [String] {
        lock.lock()
        defer { lock.unlock() }
        return names
    }
}
