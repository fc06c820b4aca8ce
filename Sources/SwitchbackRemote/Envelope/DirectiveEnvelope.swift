#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The signed document served over HTTP, modelled on DSSE:
/// `{"payload":"<base64 of the directive JSON>","signatures":[{"keyid":"…","sig":"<base64>"}]}`.
///
/// Each signature covers ``signingPrefix`` followed by the exact payload bytes, so no JSON
/// canonicalisation is needed and a signature can never be confused with one made for
/// another purpose. A verifier decodes the payload only after a signature checks out.
public struct DirectiveEnvelope: Sendable, Equatable, Codable {
    /// The domain-separation prefix signed in front of the payload: `"switchback-directive-v1\n"`.
    public static let signingPrefix = "switchback-directive-v1\n"
    /// The most signatures a verifier looks at; an envelope with more is malformed.
    public static let maxSignatures = 16

    /// The standard base64 of the directive's JSON bytes.
    public var payload: String
    /// One or more signatures over ``signingPrefix`` + payload bytes.
    public var signatures: [EnvelopeSignature]

    /// Creates an envelope.
    public init(payload: String, signatures: [EnvelopeSignature]) {
        self.payload = payload
        self.signatures = signatures
    }

    /// The bytes a signature covers: ``signingPrefix`` then the payload bytes.
    public static func signedMessage(payload: Data) -> [UInt8] {
        Array(signingPrefix.utf8) + Array(payload)
    }

    /// The envelope as the file to publish: pretty-printed JSON with sorted keys and a final newline.
    public func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding two strings and an array of string pairs cannot fail.
        var data = (try? encoder.encode(self)) ?? Data()
        data.append(0x0A)
        return data
    }
}
