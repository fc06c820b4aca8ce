/// What a sync found, in one value the caller persists and `rollbackctl status` shows.
///
/// Only ``applied(_:)`` asks the caller to change the decision; every other outcome leaves
/// the last accepted decision in place.
public enum SyncOutcome: Sendable, Equatable {
    /// A new authentic directive for this install: persist its decision, its reason and its serial.
    case applied(Directive)
    /// Nothing new: the server answered 304 (`serial` nil), or served the directive already
    /// applied (`serial` set).
    case unchanged(serial: UInt64?)
    /// An authentic directive that is not for this install (another version, outside the rollout).
    case notApplicable(NotApplicableCode, reason: String)
    /// Something was wrong with what was served; see ``RefusalCode``.
    case refused(RefusalCode, reason: String)
    /// Nothing could be fetched; see ``UnreachableCode``.
    case unreachable(UnreachableCode, reason: String)

    /// True for `applied`, `unchanged` and `notApplicable`: the server was reached and told
    /// the truth, so the caller records this as the last successful check.
    public var isSuccessfulCheck: Bool {
        switch self {
        case .applied, .unchanged, .notApplicable: return true
        case .refused, .unreachable: return false
        }
    }

    /// The kind as a stable word for JSON and scripts: `applied`, `unchanged`,
    /// `not_applicable`, `refused`, `unreachable`.
    public var kind: String {
        switch self {
        case .applied: return "applied"
        case .unchanged: return "unchanged"
        case .notApplicable: return "not_applicable"
        case .refused: return "refused"
        case .unreachable: return "unreachable"
        }
    }

    /// The code of a not-applicable, refused or unreachable outcome (`"bad_signature"`),
    /// `"not_modified"` for a 304, else nil.
    public var code: String? {
        switch self {
        case .unchanged(serial: nil): return "not_modified"
        case .applied, .unchanged: return nil
        case .notApplicable(let code, _): return code.rawValue
        case .refused(let code, _): return code.rawValue
        case .unreachable(let code, _): return code.rawValue
        }
    }

    /// The directive to persist, for `applied` only.
    public var appliedDirective: Directive? {
        if case .applied(let directive) = self { return directive }
        return nil
    }
}

extension SyncOutcome: CustomStringConvertible {
    /// One sentence for `rollbackctl status`.
    public var description: String {
        switch self {
        case .applied(let directive):
            return "Applied directive serial \(directive.serial): \(directive.decision.summary) (reason: \(directive.reason))."
        case .unchanged(serial: nil):
            return "The directive has not changed since the last check (HTTP 304 Not Modified); the decision stays."
        case .unchanged(serial: let serial?):
            return "Directive serial \(serial) is the one already applied; the decision stays."
        case .notApplicable(_, let reason), .refused(_, let reason), .unreachable(_, let reason):
            return reason
        }
    }
}
