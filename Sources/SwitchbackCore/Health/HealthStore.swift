/// Reads and updates `health` in a state directory.
///
/// Durability is chosen per write: using a try is written atomically but without fsync (a
/// decrement lost to a power cut only gives the build one more try), while good and bad
/// verdicts are fsynced (a lost good mark would count a healthy build down again).
public struct HealthStore: Sendable {
    public let directory: StateDirectory

    public init(directory: StateDirectory) { self.directory = directory }

    public var path: String { directory.path + "/health" }

    /// Loads the record. A missing file is an empty record; a damaged one — including one
    /// whose numbers are out of range (`HealthRecord.parse` checks every range) — is an empty record plus the
    /// problem (every build is then on trial again: nothing is trusted).
    public func load() -> (record: HealthRecord, problem: SwitchbackError?) {
        do {
            guard let bytes = try FileSystem.read(path, limit: 64 << 10) else { return (HealthRecord(), nil) }
            let record = try HealthRecord.parse(bytes, path: path)
            return (record, nil)
        } catch {
            return (HealthRecord(), error)
        }
    }

    /// Reads, changes and writes the record under the state directory's lock.
    @discardableResult
    public func update<T>(durable: Bool, _ change: (inout HealthRecord) throws(SwitchbackError) -> T) throws(SwitchbackError) -> T {
        try directory.prepare()
        return try FileLock.withLock(at: directory.lockPath) { () throws(SwitchbackError) in
            try updateLocked(durable: durable, change)
        }
    }

    /// `update` for a caller that already holds the state directory's lock.
    @discardableResult
    public func updateLocked<T>(durable: Bool, _ change: (inout HealthRecord) throws(SwitchbackError) -> T) throws(SwitchbackError) -> T {
        var record = load().record
        let result = try change(&record)
        try FileSystem.replace(path, with: record.serialized(), durable: durable)
        return result
    }
}
