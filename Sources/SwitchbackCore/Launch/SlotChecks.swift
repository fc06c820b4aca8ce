/// The planner's slot checks as a start makes them: each slot is verified once, when the
/// plan first asks, and the verified file (opened once, checked on its descriptor) is kept
/// for loading. A plain start verifies only the slot it runs.
final class SlotChecks {
    let verifier: SlotVerifier
    private(set) var verified: [BuildSlot: SlotVerifier.Verified] = [:]
    private var problems: [BuildSlot: String] = [:]

    init(verifier: SlotVerifier) { self.verifier = verifier }

    /// Why `slot` cannot run, nil when it can (`SlotVerifier.verify`).
    func problem(_ slot: BuildSlot) -> String? {
        if verified[slot] != nil { return nil }
        if let problem = problems[slot] { return problem }
        do {
            verified[slot] = try verifier.verify(slot)
            return nil
        } catch {
            problems[slot] = error.message
            return error.message
        }
    }
}
