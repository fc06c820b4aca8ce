#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The HTTP validators remembered from the last successful check, sent back as
/// `If-None-Match` / `If-Modified-Since` so an unchanged directive costs a 304.
///
/// They are tied to the URL and the current-slot version they were obtained for: after
/// `--url` points elsewhere or the current slot is upgraded, they are not sent, so the
/// directive is fetched and judged again for the new version.
public struct ConditionalHeaders: Sendable, Equatable, Hashable, Codable {
    /// The server's `ETag`, sent as `If-None-Match`.
    public var etag: String?
    /// The server's `Last-Modified`, sent as `If-Modified-Since`.
    public var lastModified: String?
    /// The URL these validators came from.
    public var url: String?
    /// The current-slot version the directive behind them was judged for.
    public var currentVersion: String?

    /// No validators: the next fetch is unconditional.
    public static let none = ConditionalHeaders()

    /// Creates validators.
    public init(etag: String? = nil, lastModified: String? = nil, url: String? = nil, currentVersion: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
        self.url = url
        self.currentVersion = currentVersion
    }

    /// Whether there is anything to send.
    public var isEmpty: Bool { etag == nil && lastModified == nil }

    /// Whether these validators may be sent for `url` from an install at `currentVersion`.
    public func isUsable(for url: URL, currentVersion: String) -> Bool {
        !isEmpty && self.url == url.absoluteString && self.currentVersion == currentVersion
    }

    /// Whether validators from a 200 answer may be kept, by its `Last-Modified` and `Date`.
    ///
    /// A static server's validators are made of the file's modification time to the second
    /// (nginx's ETag is `"<mtime hex>-<size hex>"`): a same-size file replaced within the same
    /// second keeps both, and would be answered 304 for ever. So validators are kept only when
    /// the answer has a `Date` and its `Last-Modified` is more than ``minimumSettledSeconds``
    /// before it (the file had settled when it was served); an answer with a `Date` and no
    /// `Last-Modified` keeps its `ETag` (not derived from a time). Anything else (no `Date`,
    /// an unreadable time) keeps nothing: the next check is unconditional.
    public static func areTrustworthy(lastModified: String?, date: String?) -> Bool {
        guard let date, let served = HTTPDate.parse(date) else { return false }
        guard let lastModified else { return true }
        guard let modified = HTTPDate.parse(lastModified) else { return false }
        return served - modified > minimumSettledSeconds
    }

    /// How long before the answer's `Date` the file must have been modified for its validators
    /// to be kept: 2 s (one second of the timestamps' granularity, one of clock skew between
    /// the machine that wrote the file and the one that served it).
    public static let minimumSettledSeconds: Int64 = 2

    private enum CodingKeys: String, CodingKey {
        case etag, lastModified = "last_modified", url, currentVersion = "current_version"
    }
}
