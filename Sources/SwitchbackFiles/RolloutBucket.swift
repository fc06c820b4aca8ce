/// The stable rollout bucket (0...99) of an install for an app: the one rule, shared by the
/// directive's evaluation (SwitchbackRemote, which hashes with its linked libcrypto) and the
/// metrics (SwitchbackCore, which opens libcrypto on demand), so that the bucket an install
/// exports is the bucket its directives are judged by.
///
/// bucket = (first 8 bytes of SHA-256(installID + ":" + appID), big-endian) mod 100.
/// A directive with `rollout_percent` p applies when bucket < p: 0 reaches no install,
/// 100 every install, and raising p only ever adds installs.
public enum RolloutBucket {
    /// The bytes whose SHA-256 decides the bucket.
    public static func hashInput(installID: String, appID: String) -> [UInt8] {
        Array((installID + ":" + appID).utf8)
    }

    /// The bucket, in 0...99, from the SHA-256 of `hashInput(installID:appID:)`.
    public static func bucket(sha256 digest: [UInt8]) -> Int {
        let prefix = digest.prefix(8).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
        return Int(prefix % 100)
    }
}
