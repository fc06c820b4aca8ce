#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFiles

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

    /// The install's id: 128 random bits as 32 hex digits, created once (mode 0600) and kept
    /// for life. It is the install's one identity: its rollout bucket comes from it, and the
    /// metrics' `install` label and the journal's `SWITCHBACK_INSTALL` field are it, so it is
    /// unique across hosts with the same layout (the state directory's path is not).
    ///
    /// Takes no lock: the id is published whole with a link that fails when another process
    /// published first (`CheckedDirectory.publishNew`), and the loser reads the winner's. So
    /// the metrics, written while the state lock is held, can ask for it.
    public func installID() throws(SwitchbackError) -> String {
        if let id = try readInstallID() { return id }
        try directory.prepare()
        var generator = SystemRandomNumberGenerator()
        let id = FileDigest.hex((0..<16).map { _ in generator.next() as UInt8 })
        let (parent, name) = FileSystem.split(installIDPath)
        let folder = try FileSystem.directory(parent, what: "state directory")
        let published = try FileSystem.layer { () throws(FileError) in try folder.publishNew(name, with: Array((id + "\n").utf8), mode: 0o600) }
        if published { return id }
        guard let winner = try readInstallID() else {
            throw SwitchbackError(.stateInvalid, "The install id \(installIDPath) was created by another process but cannot be read; check the state directory's file system.", path: installIDPath)
        }
        return winner
    }

    /// Whether `id` is an install id as written here: 32 lowercase hex digits.
    public static func isInstallID(_ id: String) -> Bool { FileDigest.isLowercaseHex(id, digits: 32) }

    private func readInstallID() throws(SwitchbackError) -> String? {
        guard let bytes = try FileSystem.read(installIDPath, limit: 4096) else { return nil }
        let id = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        if id.isEmpty { return nil }
        // It names the install in metrics labels, file names and journal fields.
        guard Self.isInstallID(id) else {
            throw SwitchbackError(.stateInvalid, "The install id \(installIDPath) is not 32 lowercase hex digits; remove the file and a new id is made at the next sync or recorded event (the install's rollout bucket and metrics label change with it).", path: installIDPath)
        }
        return id
    }
}
