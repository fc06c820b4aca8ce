/// The planner's slot checks as a start makes them: each slot is verified once, when the
/// plan first asks, and the verified file (opened once, checked on its descriptor) is kept
/// for loading. A plain start verifies only the slot it runs. (Plain stored properties, not
/// a collection: each generic type a start instantiates costs its metadata at every start.)
final class SlotChecks {
    let verifier: SlotVerifier
    private var current: SlotVerifier.Verified?, previous: SlotVerifier.Verified?
    private var currentProblem: String?, previousProblem: String?

    init(verifier: SlotVerifier) { self.verifier = verifier }

    /// Why `slot` cannot run, nil when it can (`SlotVerifier.verify`).
    func problem(_ slot: BuildSlot) -> String? {
        if verified(slot) != nil { return nil }
        if let known = slot == .current ? currentProblem : previousProblem { return known }
        do {
            let file = try verifier.verify(slot)
            if slot == .current { current = file } else { previous = file }
            return nil
        } catch {
            if slot == .current { currentProblem = error.message } else { previousProblem = error.message }
            return error.message
        }
    }

    /// The verified file of `slot`, if it was checked and passed.
    func verified(_ slot: BuildSlot) -> SlotVerifier.Verified? { slot == .current ? current : previous }
}
