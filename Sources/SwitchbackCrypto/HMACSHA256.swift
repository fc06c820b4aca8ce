import CSwitchbackCrypto

/// HMAC-SHA256 by libcrypto (`HMAC` with `EVP_sha256`): the signature of a hook's webhook
/// (docs/hooks.md), which a receiver checks with the same key.
public enum HMACSHA256 {
    /// The 32-byte code of `message` under `key`.
    public static func code(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let done = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                out.withUnsafeMutableBytes { outBytes in
                    HMAC(EVP_sha256(), keyBytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(keyBytes.count),
                         messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count,
                         outBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
                }
            }
        }
        precondition(done != nil && length == 32, "HMAC-SHA256 failed: \(OpenSSL.drainErrors() ?? "libcrypto gave no reason")")
        return out
    }
}
