#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A remote rollback decision, signed by the operator and fetched by `rollbackctl sync`.
///
/// The wire format (snake_case JSON inside a signed envelope) is described in `docs/remote.md`.
/// Every field is required except `rollout_percent`. Times are whole seconds: the initialiser
/// drops fractions so that a directive survives an encode/decode round trip unchanged.
public struct Directive: Sendable, Equatable, Hashable {
    /// The application this directive is for; must equal the manifest's app id.
    public let appID: String
    /// A number that only goes up: an install refuses a serial below the last one it accepted.
    public let serial: UInt64
    /// When the operator signed it.
    public let issuedAt: Date
    /// After this instant the directive is refused and the last accepted decision stays.
    public let expiresAt: Date
    /// Run the previous slot (roll back) or the current one (roll forward).
    public let decision: DirectiveDecision
    /// The current-slot versions this directive is aimed at (exact strings, at least one).
    /// An install whose current slot has another version ignores it.
    public let appliesTo: [String]
    /// If set (0...100), only installs whose stable bucket is below it apply the directive.
    public let rolloutPercent: Int?
    /// Why, in the operator's words; shown by `rollbackctl status` and recorded in history.
    public let reason: String

    /// The longest `reason` accepted, in characters.
    public static let maxReasonLength = 1000
    /// The most `appliesTo` entries accepted.
    public static let maxAppliesToCount = 64
    /// The times accepted, in seconds since 1970: years 1970 through 9999, the range of every
    /// time Switchback reads (so a time converted to whole seconds never overflows).
    public static let timeRange: ClosedRange<TimeInterval> = 0...253_402_300_799

    /// Creates a directive. Fractions of seconds in the dates are dropped.
    ///
    /// Does not validate; ``validate()`` does, and signing and decoding call it.
    public init(
        appID: String,
        serial: UInt64,
        issuedAt: Date,
        expiresAt: Date,
        decision: DirectiveDecision,
        appliesTo: [String],
        rolloutPercent: Int? = nil,
        reason: String
    ) {
        self.appID = appID
        self.serial = serial
        self.issuedAt = Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))
        self.expiresAt = Date(timeIntervalSince1970: expiresAt.timeIntervalSince1970.rounded(.down))
        self.decision = decision
        self.appliesTo = appliesTo
        self.rolloutPercent = rolloutPercent
        self.reason = reason
    }

    /// Checks the rules of the format: a non-empty app id, a serial of at least 1,
    /// times within years 1970...9999, `expires_at` after `issued_at`, one to 64 non-empty `applies_to` versions,
    /// `rollout_percent` within 0...100, a non-empty one-line reason of at most 1000 characters,
    /// and no control characters in any text (reasons are shown verbatim by `rollbackctl status`).
    ///
    /// Throws ``RemoteError`` with code ``RemoteError/Code/invalidDirective`` naming the broken rule.
    public func validate() throws {
        func fail(_ rule: String) -> RemoteError { RemoteError(.invalidDirective, detail: rule) }
        if appID.isBlank { throw fail("app_id is empty") }
        if serial == 0 { throw fail("serial must be at least 1") }
        if !Self.timeRange.contains(issuedAt.timeIntervalSince1970) { throw fail("issued_at is outside years 1970...9999") }
        if !Self.timeRange.contains(expiresAt.timeIntervalSince1970) { throw fail("expires_at is outside years 1970...9999") }
        if expiresAt <= issuedAt { throw fail("expires_at must be later than issued_at") }
        if appliesTo.isEmpty { throw fail("applies_to must name at least one current-slot version") }
        if appliesTo.count > Self.maxAppliesToCount { throw fail("applies_to has more than \(Self.maxAppliesToCount) versions") }
        if appliesTo.contains(where: { $0.isBlank }) { throw fail("applies_to contains an empty version") }
        if let rolloutPercent, !(0...100).contains(rolloutPercent) { throw fail("rollout_percent \(rolloutPercent) is outside 0...100") }
        if reason.isBlankOrLineBreaks { throw fail("reason is empty") }
        if reason.count > Self.maxReasonLength { throw fail("reason is longer than \(Self.maxReasonLength) characters") }
        if reason.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { throw fail("reason must be one line without control characters") }
        if appID.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { throw fail("app_id contains control characters") }
        if appliesTo.contains(where: { $0.unicodeScalars.contains { $0.properties.generalCategory == .control } }) { throw fail("applies_to contains control characters") }
    }

    /// Whether the directive targets an install whose current slot runs `version`.
    public func applies(toVersion version: String) -> Bool {
        appliesTo.contains(version)
    }
}
