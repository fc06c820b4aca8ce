/// Why a directive (or the attempt to fetch one) was refused: something was wrong with what
/// was served or where it was served from. The last accepted decision stays.
public enum RefusalCode: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// Plain http to a host that is not loopback, and the manifest does not allow it.
    case insecureURL = "insecure_url"
    /// A scheme other than https or http.
    case unsupportedScheme = "unsupported_scheme"
    /// A redirect to plain http on a non-loopback host.
    case insecureRedirect = "insecure_redirect"
    /// The answer is larger than the body cap.
    case bodyTooLarge = "body_too_large"
    /// The answer has a `Content-Encoding` (gzip, br, ...) though only identity was asked for:
    /// never inflated, so a compression bomb costs nothing.
    case unrequestedEncoding = "unrequested_encoding"
    /// The answer is not an envelope (not JSON, bad base64, no signatures, ...).
    case malformedEnvelope = "malformed_envelope"
    /// A validly signed payload that is not a valid directive.
    case malformedDirective = "malformed_directive"
    /// A signature by a trusted key id that does not verify.
    case badSignature = "bad_signature"
    /// No signature by any trusted key.
    case untrustedKey = "untrusted_key"
    /// The directive names another app id.
    case wrongApp = "wrong_app"
    /// The serial is below the last accepted one: a replay or a stale copy.
    case replayedSerial = "replayed_serial"
    /// The directive's `expires_at` has passed.
    case expired = "expired"
    /// The directive's `issued_at` is more than the allowed clock skew in the future.
    case notYetValid = "not_yet_valid"
    /// A directive file (`file://`) that another user could have written or replaced: the
    /// file, a directory on its way or a link is owned by another user or writable by others.
    case untrustedFile = "untrusted_file"
}
