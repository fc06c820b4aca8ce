import SwitchbackCrypto

/// The stable rollout bucket (0...99) of an install for an app.
///
/// bucket = (first 8 bytes of SHA-256(installID + ":" + appID), big-endian) mod 100.
/// A directive with `rollout_percent` p applies when bucket < p: 0 reaches no install,
/// 100 every install, and raising p only ever adds installs.
public enum RolloutBucket {
    /// The bucket of `installID` for `appID`, in 0...99.
    public static func bucket(installID: String, appID: String) -> Int {
        let digest = SHA256.hash(Array((installID + ":" + appID).utf8))
        let prefix = digest.prefix(8).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
        return Int(prefix % 100)
    }
}
