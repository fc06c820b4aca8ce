/// Why an authentic, valid directive does not apply to this install. This is not an attack
/// and the check counts as successful; the decision stays as it was.
public enum NotApplicableCode: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// The directive targets other current-slot versions.
    case versionMismatch = "version_mismatch"
    /// The directive has a rollout percentage and this install's bucket is outside it.
    case outsideRollout = "outside_rollout"
}
