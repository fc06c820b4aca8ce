import SwitchbackCrypto
import SwitchbackFiles

extension RolloutBucket {
    /// The bucket of `installID` for `appID`, in 0...99 (the rule: SwitchbackFiles'
    /// `RolloutBucket`).
    public static func bucket(installID: String, appID: String) -> Int {
        bucket(sha256: SHA256.hash(hashInput(installID: installID, appID: appID)))
    }
}
