/// Limits and policy for fetching a directive.
public struct FetchOptions: Sendable, Equatable {
    /// One deadline for the whole fetch (connect, redirects, headers, body), enforced by
    /// our own timer and `cancel()`. Default 5 s.
    public var deadline: Duration
    /// The largest body read, in bytes; reading stops as soon as it is passed. Default 64 KiB.
    public var maxBodyBytes: Int
    /// The most redirects followed. Default 3. (URLSession on Linux also stops at 20.)
    public var maxRedirects: Int
    /// Whether plain http to a non-loopback host is allowed (from the manifest). Default false.
    public var allowInsecureHTTP: Bool
    /// The `User-Agent` header sent.
    public var userAgent: String

    /// Creates options; every parameter has the documented default.
    public init(
        deadline: Duration = .seconds(5),
        maxBodyBytes: Int = 64 * 1024,
        maxRedirects: Int = 3,
        allowInsecureHTTP: Bool = false,
        userAgent: String = "switchback-rollbackctl/1"
    ) {
        self.deadline = deadline
        self.maxBodyBytes = maxBodyBytes
        self.maxRedirects = maxRedirects
        self.allowInsecureHTTP = allowInsecureHTTP
        self.userAgent = userAgent
    }

    /// The deadline in seconds, for timers.
    var deadlineSeconds: Double {
        let parts = deadline.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The deadline as short text for reasons: "5 s", "0.5 s".
    var deadlineText: String {
        let seconds = deadlineSeconds
        if seconds == seconds.rounded() { return "\(Int(seconds)) s" }
        return "\((seconds * 1000).rounded() / 1000) s"
    }
}
