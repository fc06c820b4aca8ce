/// The health verdict on one build, identified by its SHA-256 wherever it sits: a build
/// marked bad stays bad when a release moves it from the current slot to the previous one.
///
/// A build starts on trial with a number of tries. Every start of an on-trial build uses
/// one try before the entry point runs; a good mark (the app's `mark_good` callback, exit
/// code 0 when the manifest allows it, or `rollbackctl mark-good`) makes it good for good.
/// A start with no tries left marks it bad.
public struct SlotHealth: Sendable, Equatable {
    /// Where the build stands.
    public enum Verdict: Sendable, Equatable {
        case trial(triesLeft: Int)
        case good
        case bad
    }

    /// The SHA-256 of the build this verdict is about.
    public var build: String
    public var verdict: Verdict
    /// Starts of this build that used a try without being marked good.
    public var failedStarts: Int
    /// When it was last marked good (seconds since the epoch).
    public var lastGoodAt: Int64?
    /// When the verdict last changed.
    public var changedAt: Int64?
    /// Why the verdict is what it is, in a few words ("3 starts without a good mark").
    public var note: String?
    /// The build's version, for messages (nil in records from before format 2).
    public var version: String?
    /// Who gave a bad verdict: `cli` and `remote` are explicit rejections, which automatic
    /// rollback never overrides; `auto` is a build that ran out of tries.
    public var markedBy: ChoiceSource?

    public init(build: String, verdict: Verdict, failedStarts: Int = 0, lastGoodAt: Int64? = nil, changedAt: Int64? = nil,
                note: String? = nil, version: String? = nil, markedBy: ChoiceSource? = nil) {
        self.build = build
        self.version = version
        self.markedBy = markedBy
        self.verdict = verdict
        self.failedStarts = failedStarts
        self.lastGoodAt = lastGoodAt
        self.changedAt = changedAt
        self.note = note
    }

    /// A build seen for the first time: on trial with `tries`.
    public static func fresh(build: String, tries: Int, version: String? = nil) -> SlotHealth {
        SlotHealth(build: build, verdict: .trial(triesLeft: tries), version: version)
    }

    public var isGood: Bool { verdict == .good }
    public var isBad: Bool { verdict == .bad }
    /// True when an operator or a directive rejected this build (marked it bad, or rolled
    /// back from it): automatic rollback never switches to it.
    public var isRejected: Bool { verdict == .bad && (markedBy == .cli || markedBy == .remote) }
    /// True for a build on trial with no tries left: the next start marks it bad.
    public var isExhausted: Bool { verdict == .trial(triesLeft: 0) }

    /// "good", "on trial with 2 tries left", "bad (3 starts without a good mark)".
    public var summary: String {
        switch verdict {
        case .good: return "good"
        case .trial(let tries): return "on trial with \(tries) \(tries == 1 ? "try" : "tries") left"
        case .bad: return "bad" + (note.map { " (\($0))" } ?? "")
        }
    }
}
