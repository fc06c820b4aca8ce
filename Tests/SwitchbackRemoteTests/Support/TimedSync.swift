import Foundation
import Testing
@testable import SwitchbackRemote

/// The deadline the hostile tests give a sync.
let hostileDeadline: Duration = .seconds(2)

/// Runs one sync and measures how long it took.
func timedSync(
    _ url: URL,
    context: InstallContext = TestFixtures.context(),
    conditional: ConditionalHeaders = .none,
    options: FetchOptions = FetchOptions(deadline: hostileDeadline)
) async -> (result: SyncResult, elapsed: Duration) {
    let clock = ContinuousClock()
    let start = clock.now
    let result = await sync(url: url, trust: TestFixtures.trust, context: context, conditional: conditional, options: options)
    return (result, clock.now - start)
}

/// Checks that a sync ended within its deadline plus one second.
func expectWithinDeadline(_ elapsed: Duration, _ options: FetchOptions = FetchOptions(deadline: hostileDeadline), sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(elapsed < options.deadline + .seconds(1), "took \(elapsed), deadline \(options.deadline)", sourceLocation: sourceLocation)
}

/// Checks that a reason is one sentence: capitalised, one final period, no line breaks.
func expectOneSentence(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(text.first?.isUppercase == true, "\(text)", sourceLocation: sourceLocation)
    #expect(text.hasSuffix("."), "\(text)", sourceLocation: sourceLocation)
    #expect(!text.contains("\n"), "\(text)", sourceLocation: sourceLocation)
    #expect(!text.dropLast().contains(". "), "more than one sentence: \(text)", sourceLocation: sourceLocation)
}

extension SyncOutcome {
    var refusalCode: RefusalCode? {
        if case .refused(let code, _) = self { return code }
        return nil
    }

    var unreachableCode: UnreachableCode? {
        if case .unreachable(let code, _) = self { return code }
        return nil
    }

    var notApplicableCode: NotApplicableCode? {
        if case .notApplicable(let code, _) = self { return code }
        return nil
    }
}
