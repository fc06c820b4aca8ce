/// Why no directive could be fetched. The last accepted decision stays.
public enum UnreachableCode: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// No complete answer within the deadline (a hung or dripping server).
    case timedOut = "timed_out"
    /// The connection failed: refused, reset, host not found, network down.
    case connectionFailed = "connection_failed"
    /// TLS failed: an untrusted or mismatched certificate, a failed handshake.
    case tlsFailed = "tls_failed"
    /// The server answered with a status other than 200 (or 304 to a conditional request).
    case httpStatus = "http_status"
    /// More redirects than allowed (a redirect loop).
    case tooManyRedirects = "too_many_redirects"
    /// The calling task was cancelled.
    case cancelled = "cancelled"
    /// The directive file (`file://`) does not exist (nothing published there yet), or could
    /// not be read.
    case fileUnreadable = "file_unreadable"
}
