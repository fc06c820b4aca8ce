import Foundation

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

    private enum CodingKeys: String, CodingKey {
        case etag, lastModified = "last_modified", url, currentVersion = "current_version"
    }
}
