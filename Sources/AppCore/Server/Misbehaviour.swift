#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// How `serve --http` misbehaves on purpose, so that a test or a demonstration can make one
/// release bad without building a bad one: the file `misbehave` in the data directory, lines
/// of `KEY=VALUE` (`#` starts a comment):
///
///     version=1.3.0       # only this version misbehaves (absent: every version)
///     error_percent=30    # answer 500 to that share of the requests, chosen at random
///     delay_ms=40         # add that long to every answer
///     work_ms=10          # every version: that much CPU time spent on every answer
///
/// `work_ms` applies to every version whatever `version` says: two builds that work alike,
/// whose answers slow down together on a loaded host (a baseline judged beside a canary).
/// `GET /metrics` never misbehaves, so the app's own metrics stay readable.
struct Misbehaviour: Equatable {
    /// The version it applies to; nil: every version.
    var version: String?
    /// The share of requests answered 500, in percent (0 to 100).
    var errorPercent: Double = 0
    /// Added to every answer.
    var delayMilliseconds = 0
    /// CPU time spent on every answer, by every version.
    var workMilliseconds = 0

    static let longestDelayMilliseconds = 600_000

    /// A line of the file that does not parse: one sentence for the server's stderr.
    struct ParseError: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    /// Parses the file's text; throws for the first line that does not parse.
    static func parse(_ text: String) throws(ParseError) -> Misbehaviour {
        var misbehaviour = Misbehaviour()
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.prefix { $0 != "#" }.trimmingWhitespace()
            guard !line.isEmpty else { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ParseError(description: "line \(index + 1) '\(line)' is not KEY=VALUE")
            }
            let key = line[..<equals].trimmingWhitespace()
            let value = line[line.index(after: equals)...].trimmingWhitespace()
            switch key {
            case "version":
                guard !value.isEmpty else { throw ParseError(description: "line \(index + 1): version is empty") }
                misbehaviour.version = value
            case "error_percent":
                guard let percent = Double(value), percent >= 0, percent <= 100 else {
                    throw ParseError(description: "line \(index + 1): error_percent wants a number from 0 to 100, not '\(value)'")
                }
                misbehaviour.errorPercent = percent
            case "delay_ms", "work_ms":
                guard value.allSatisfy({ $0 >= "0" && $0 <= "9" }), let milliseconds = Int(value),
                      milliseconds <= longestDelayMilliseconds else {
                    throw ParseError(description: "line \(index + 1): \(key) wants a whole number of milliseconds up to \(longestDelayMilliseconds), not '\(value)'")
                }
                if key == "work_ms" { misbehaviour.workMilliseconds = milliseconds } else { misbehaviour.delayMilliseconds = milliseconds }
            default:
                throw ParseError(description: "line \(index + 1): unknown key '\(key)' (version, error_percent, delay_ms, work_ms)")
            }
        }
        return misbehaviour
    }

    /// `errorPercent` as written for people: `30`, `12.5`.
    var errorPercentText: String {
        errorPercent == errorPercent.rounded() ? String(Int(errorPercent)) : String(errorPercent)
    }

    /// Whether a build of `version` misbehaves.
    func applies(to version: String) -> Bool { self.version == nil || self.version == version }

    /// What a build of `version` does: all of it, or only the work every version does; nil
    /// when that is nothing.
    func forVersion(_ version: String) -> Misbehaviour? {
        if applies(to: version) { return self }
        guard workMilliseconds > 0 else { return nil }
        return Misbehaviour(version: self.version, workMilliseconds: workMilliseconds)
    }

    /// Spends `workMilliseconds` of this thread's CPU time (a loaded host makes it take longer).
    func work() {
        guard workMilliseconds > 0 else { return }
        func cpu() -> Int64 {
            var now = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
            return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
        }
        let end = cpu() + Int64(workMilliseconds) * 1_000_000
        var spin: UInt64 = 0
        while cpu() < end {
            for step in 0..<1000 { spin = spin &* 6364136223846793005 &+ UInt64(step) }
        }
        withExtendedLifetime(spin) {}
    }

    /// Whether this request is one of the `errorPercent` answered 500.
    func failsRequest<Generator: RandomNumberGenerator>(using generator: inout Generator) -> Bool {
        errorPercent > 0 && Double.random(in: 0..<100, using: &generator) < errorPercent
    }
}

/// The `misbehave` file of a data directory, read again at most once a second: a request
/// costs a clock read, and a change to the file shows within a second.
final class MisbehaviourFile: Sendable {
    let path: String
    private let version: String
    private let cache = Mutex(Cache())

    private struct Cache {
        var readAt = -Double.infinity
        /// What was read last; nil: no file, or not for this version.
        var misbehaviour: Misbehaviour?
        /// The text last read, so a file that does not parse is reported once, not every second.
        var text: String?
    }

    init(dataDirectory: String, version: String) {
        path = dataDirectory + "/misbehave"
        self.version = version
    }

    /// How this build misbehaves now; nil when it does not. A file that does not parse is
    /// ignored, with one line on stderr each time its text changes.
    func current(now: Double = monotonicSeconds()) -> Misbehaviour? {
        cache.withLock { cache in
            guard now - cache.readAt >= 1 else { return cache.misbehaviour }
            cache.readAt = now
            let text = readSmallFile(path)
            defer { cache.text = text }
            guard let text else {
                cache.misbehaviour = nil
                return nil
            }
            do {
                let parsed = try Misbehaviour.parse(text)
                cache.misbehaviour = parsed.forVersion(version)
                if text != cache.text, let misbehaviour = cache.misbehaviour {
                    printError("serve: misbehaving on purpose (\(path)): \(misbehaviour.errorPercentText)% of requests answered 500, \(misbehaviour.delayMilliseconds) ms added to every answer, \(misbehaviour.workMilliseconds) ms of CPU spent on each")
                }
            } catch {
                cache.misbehaviour = nil
                if text != cache.text { printError("serve: ignoring \(path): \(error); fix or remove the file.") }
            }
            return cache.misbehaviour
        }
    }
}

/// The text of a file of at most 64 KiB; nil when it cannot be read (missing, a directory,
/// too large).
private func readSmallFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while bytes.count <= 65536 {
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        guard count >= 0 else { return nil }
        if count == 0 { return String(decoding: bytes, as: UTF8.self) }
        bytes += buffer[0..<count]
    }
    return nil
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs and carriage returns.
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
