import SwitchbackCore
import Testing

/// `HealthRecord.mark`, the one way a verdict is written (docs/design.md, "Who decides what").
struct HealthMarkTests {
    let build = BuildIdentity(sha256: String(repeating: "a", count: 64), version: "1.3.0")

    @Test func aGoodMarkRefillsTheTriesAndDatesTheGoodVerdict() {
        var record = HealthRecord()
        var used = record.health(of: build, tries: 3)
        used.verdict = .trial(triesLeft: 1)
        used.failedStarts = 2
        record.set(used)
        let marked = record.mark(build, .good, tries: 3, note: "ready: READY=1", at: 1_795_000_000)
        #expect(marked.isGood && marked.failedStarts == 0 && marked.markedBy == nil)
        #expect(marked.lastGoodAt == 1_795_000_000 && marked.changedAt == 1_795_000_000 && marked.note == "ready: READY=1")
        #expect(record.health(of: build, tries: 3) == marked)
    }

    @Test func aBadMarkSaysWhoAndOnlyAnOperatorOrADirectiveRejects() {
        var record = HealthRecord()
        let auto = record.mark(build, .bad(by: .auto), tries: 3, note: "3 starts without a good mark", at: 10)
        #expect(auto.isBad && !auto.isRejected && auto.markedBy == .auto)
        let cli = record.mark(build, .bad(by: .cli), tries: 3, note: "marked bad with rollbackctl", at: 20)
        #expect(cli.isRejected && cli.changedAt == 20)
    }

    @Test func keepingRejectionKeepsWhoRejectedAndWhy() {
        var record = HealthRecord()
        record.mark(build, .bad(by: .cli), tries: 3, note: "an operator rolled back from it: corrupts notes", at: 10)
        let kept = record.mark(build, .bad(by: .remote), tries: 3, note: "a signed remote directive rolled back from it", at: 20,
                               keepingRejection: true)
        #expect(kept.markedBy == .cli && kept.note == "an operator rolled back from it: corrupts notes" && kept.changedAt == 10)
        // Without it, a later verdict replaces the rejection (rollbackctl mark-good).
        #expect(record.mark(build, .good, tries: 3, note: "marked good with rollbackctl", at: 30).isGood)
    }

    /// Where a build marked bad while it runs hands over: the rule `HealthPolicy.choose` uses.
    @Test func aBadBuildHandsOverOnlyToABuildNeitherRejectedNorBad() {
        var record = HealthRecord()
        let other = BuildIdentity(sha256: String(repeating: "b", count: 64), version: "1.2.0")
        #expect(HealthPolicy.handover(to: record.health(of: other, tries: 3)) == .switchToOther)
        let bad = record.mark(other, .bad(by: .auto), tries: 3, note: "crashed", at: 1)
        #expect(HealthPolicy.handover(to: bad) == .otherBad)
        let rejected = record.mark(other, .bad(by: .remote), tries: 3, note: "a signed remote directive rolled back from it", at: 2)
        #expect(HealthPolicy.handover(to: rejected) == .otherRejected(note: "a signed remote directive rolled back from it"))
    }
}

/// The app's sentences about its data pass the one boundary for outside text before status
/// or a refusal prints them: no escape sequence reaches the operator's terminal.
struct DataTextTests {
    @Test func thePublishedDetailIsOneLineOfPrintableText() throws {
        let file = "published_by=1.2.0\npublished_at=1795000000\nreader_floor=1.2.0\nrollback_to=1.1.0\nrollback=refused\n"
            + "detail=no revert \u{1B}]0;owned\u{07}\u{1B}[31mred\nend=ok\n"
        let data = try DataState.parse(Array(file.utf8), path: "/x/data-state")
        let detail = try #require(data.detail)
        #expect(!detail.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(detail.debugDescription)")
        #expect(detail.hasPrefix("no revert"))
    }
}
