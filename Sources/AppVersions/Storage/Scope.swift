/// Names one independent ledger: its own history, its own migration record.
///
/// Most apps use ``app`` only. An app whose users each keep separate data gives every
/// user a scope (`Scope("user-\(id)")`), so each user's data is migrated on its own,
/// as the data it belongs to is first opened by a new version.
///
/// Any string is a valid name; the file store turns it into a safe file name.
public struct Scope: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The scope's name, exactly as given.
    public let name: String

    /// Creates a scope with any name, such as a user identifier.
    public init(_ name: String) {
        self.name = name
    }

    /// Creates a scope from a literal name.
    public init(stringLiteral value: String) {
        self.name = value
    }

    /// The scope for data shared by the whole app, named `app`.
    public static let app = Scope("app")

    /// The scope's name.
    public var description: String { name }
}
