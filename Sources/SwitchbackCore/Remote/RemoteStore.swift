#if canImport(Glibc)
import Glibc
#endif

/// Reads and writes the remote check record (`remote`) and the install id (`install-id`) in
/// a state directory.
public struct RemoteStore: Sendable {
    public let directory: StateDirectory

    public init(directory: StateDirectory) { self.directory = directory }

    /// The remote check record.
    public var path: String { directory.path + "/remote" }
    /// The install's random id, for rollout buckets.
    public var installIDPath: String { directory.path + "/install-id" }

    /// Loads the record. A missing file is an empty record (nothing checked yet); a damaged
    /// one is an empty record plus the problem. Losing it forgets the validators, the accepted
    /// and highest seen serials and the freshness times, so the next directive is fetched and
    /// judged afresh (and an older, still valid directive would be accepted once: keep serials
    /// moving and expiries short, `rollbackctl sign --renew`).
    public func load() -> (record: RemoteRecord, problem: SwitchbackError?) {
        do {
            guard let bytes = try FileSystem.read(path, limit: 64 << 10) else { return (RemoteRecord(), nil) }
            return (try RemoteRecord.parse(bytes, path: path), nil)
        } catch {
            return (RemoteRecord(), error)
        }
    }

    /// Reads, changes and writes the record atomically and durably under the state lock.
    @discardableResult
    public func update<T>(_ change: (inout RemoteRecord) throws(SwitchbackError) -> T) throws(SwitchbackError) -> T {
        try directory.prepare()
        return try FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            var record = load().record
            let result = try change(&record)
            try FileSystem.replace(path, with: record.serialized())
            return result
        }
    }

    /// The install's id: 128 random bits as 32 hex digits, created once (mode 0600, under the
    /// state lock) and kept for life, so the install's rollout bucket never moves.
    public func installID() throws(SwitchbackError) -> String {
        if let id = try readInstallID() { return id }
        try directory.prepare()
        return try FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            if let id = try readInstallID() { return id }
            var generator = SystemRandomNumberGenerator()
            let id = [generator.next(), generator.next()].map { (word: UInt64) -> String in
                let hex = String(word, radix: 16)
                return String(repeating: "0", count: 16 - hex.count) + hex
            }.joined()
            try FileSystem.replace(installIDPath, with: Array((id + "\n").utf8), mode: 0o600)
            return id
        }
    }

    private func readInstallID() throws(SwitchbackError) -> String? {
        guard let bytes = try FileSystem.read(installIDPath, limit: 4096) else { return nil }
        let id = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        return id.isEmpty ? nil : id
    }
}
