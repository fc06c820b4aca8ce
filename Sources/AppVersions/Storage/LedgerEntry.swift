/// One line of a scope's append-only ledger, as a ``LedgerStore`` stores it.
///
/// Stores treat entries as opaque values: keep them in the order they were appended
/// and hand them back unchanged. An entry converts to and from a single line of text
/// (``line``, ``init(line:)``) and is `Codable` as that string, so a custom store can
/// put it in a database column or a JSON array.
public struct LedgerEntry: Sendable, Equatable, Codable, CustomStringConvertible {
    let record: LedgerRecord

    init(_ record: LedgerRecord) {
        self.record = record
    }

    /// The entry as one line of text without a newline; tabs separate the fields.
    public var line: String { LedgerLineCodec.encode(record) }

    /// Parses a line produced by ``line``.
    ///
    /// A line of a kind this version does not know (written by a newer release) is
    /// kept as it is and ignored, so a rolled-back build can still read the ledger.
    ///
    /// - Throws: ``AppVersionsError`` with code ``AppVersionsError/Code/corruptLedger``
    ///   when the line is a known kind with missing or malformed fields.
    public init(line: String) throws {
        do {
            record = try Array(line.utf8).withUnsafeBufferPointer { buffer throws(LedgerLineCodec.Problem) in
                try LedgerLineCodec.decode(buffer)
            }
        } catch {
            throw AppVersionsError(
                .corruptLedger,
                "The ledger entry \"\(line)\" is damaged: \(error.message); restore the ledger from a backup or remove the entry.",
                subject: line
            )
        }
    }

    /// The entry's ``line``.
    public var description: String { line }

    /// Decodes an entry from a single string holding its ``line``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(line: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
        }
    }

    /// Encodes the entry as a single string holding its ``line``.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(line)
    }
}
