/// The on-disk form of one scope's ledger.
///
/// ```
/// appversions-ledger 1
/// history	7.5e8	installed	1.0.0	b1	current	debian	12	Debian GNU/Linux 12 (bookworm)
/// ...one entry per line...
/// end 1 5c1b3f0e9d2a7788
/// ```
///
/// The last line counts the entries and carries a 64-bit checksum (``LedgerChecksum``)
/// of every byte before it, so a truncated, garbled or foreign file is reported
/// instead of misread.
/// (Crash safety comes from the atomic rename; the checksum catches damage from outside.)
struct LedgerFileFormat {
    static let magic = "appversions-ledger"
    static let currentFormat = 1
    static let header: [UInt8] = Array("\(magic) \(currentFormat)\n".utf8)

    /// Everything before the trailer line.
    var body: [UInt8]
    /// The checksum state after `body`.
    var checksum: LedgerChecksum
    /// The number of entry lines in `body`.
    var count: Int

    /// An empty ledger.
    init() {
        body = Self.header
        checksum = LedgerChecksum()
        checksum.add(Self.header[...])
        count = 0
    }

    /// The complete file content.
    var bytes: [UInt8] {
        var result = body
        result.append(contentsOf: trailer)
        return result
    }

    var trailer: [UInt8] {
        Array("end \(count) \(Self.hex(checksum.value))\n".utf8)
    }

    /// Appends entries as lines.
    mutating func append(_ entries: [LedgerEntry]) {
        for entry in entries {
            var line = Array(entry.line.utf8)
            line.append(10)
            checksum.add(line[...])
            body.append(contentsOf: line)
        }
        count += entries.count
    }

    /// Parses and verifies a file's bytes.
    ///
    /// - Throws: ``AppVersionsError`` with ``AppVersionsError/Code/corruptLedger`` or
    ///   ``AppVersionsError/Code/unsupportedLedgerFormat``, naming `path`.
    static func parse(_ bytes: [UInt8], path: String, scope: Scope) throws -> (LedgerFileFormat, [LedgerEntry]) {
        func corrupt(_ problem: String) -> AppVersionsError {
            AppVersionsError(
                .corruptLedger,
                "The ledger at \(path) is damaged (\(problem)); restore it from a backup, or move it aside to start scope \"\(scope.name)\" with a new ledger.",
                path: path, subject: scope.name
            )
        }
        // Header.
        guard let firstNewline = bytes.firstIndex(of: 10) else {
            throw bytes.isEmpty ? corrupt("the file is empty") : corrupt("it has no complete line")
        }
        let headerLine = String(decoding: bytes[..<firstNewline], as: UTF8.self)
        let headerWords = headerLine.split(separator: " ")
        guard headerWords.count == 2, headerWords[0] == magic, let format = Int(headerWords[1]) else {
            throw AppVersionsError(
                .corruptLedger,
                "The file at \(path) is not an AppVersions ledger (it does not start with \"\(magic)\"); move it aside, or give the store a directory of its own.",
                path: path, subject: scope.name
            )
        }
        guard format == currentFormat else {
            throw AppVersionsError(
                .unsupportedLedgerFormat,
                "The ledger at \(path) uses format \(format), which this release (format \(currentFormat)) cannot read; run the release that wrote it, or move the file aside to start a new ledger.",
                path: path, subject: scope.name
            )
        }
        // Trailer.
        guard bytes.last == 10 else { throw corrupt("the last line is cut off") }
        let beforeLastNewline = bytes.index(before: bytes.endIndex)
        let trailerStart = bytes[..<beforeLastNewline].lastIndex(of: 10).map { $0 + 1 } ?? 0
        guard trailerStart > firstNewline else { throw corrupt("the end line is missing") }
        let trailerWords = String(decoding: bytes[trailerStart..<beforeLastNewline], as: UTF8.self).split(separator: " ")
        guard trailerWords.count == 3, trailerWords[0] == "end",
              let expectedCount = Int(trailerWords[1]),
              let expectedChecksum = UInt64(trailerWords[2], radix: 16)
        else {
            throw corrupt("the end line is missing or malformed")
        }
        // Every entry is a line of at least two bytes: a count the body cannot hold is damage
        // (and must not reach reserveCapacity, which traps on a negative or huge count).
        guard expectedCount >= 0, expectedCount <= trailerStart / 2 else {
            throw corrupt("its end line counts \(expectedCount) entries, which its \(trailerStart) bytes cannot hold")
        }
        let body = bytes[..<trailerStart]
        var checksum = LedgerChecksum()
        checksum.add(body)
        guard checksum.value == expectedChecksum else { throw corrupt("checksum mismatch") }

        // Entries.
        var entries: [LedgerEntry] = []
        entries.reserveCapacity(expectedCount)
        var failure: (line: Int, message: String)? = nil
        bytes.withUnsafeBufferPointer { buffer in
            var lineStart = firstNewline + 1
            var lineNumber = 1
            while lineStart < trailerStart {
                lineNumber += 1
                var lineEnd = lineStart
                while buffer[lineEnd] != 10 { lineEnd += 1 }
                do throws(LedgerLineCodec.Problem) {
                    let line = UnsafeBufferPointer(rebasing: buffer[lineStart..<lineEnd])
                    entries.append(LedgerEntry(try LedgerLineCodec.decode(line)))
                } catch {
                    failure = (lineNumber, error.message)
                    return
                }
                lineStart = lineEnd + 1
            }
        }
        if let failure { throw corrupt("line \(failure.line): \(failure.message)") }
        guard entries.count == expectedCount else {
            throw corrupt("it holds \(entries.count) entries but its end line says \(expectedCount)")
        }
        var file = LedgerFileFormat()
        file.body = Array(body)
        file.checksum = checksum
        file.count = expectedCount
        return (file, entries)
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// The ledger file format for the fuzz targets (Sources/SwitchbackFuzzing): not part of the
/// SDK's surface, reached with `@_spi(Fuzzing) import AppVersions`.
@_spi(Fuzzing) public enum LedgerFileParsing {
    /// Parses and verifies a ledger file's bytes as ``FileLedgerStore`` does.
    ///
    /// - Throws: ``AppVersionsError`` with ``AppVersionsError/Code/corruptLedger`` or
    ///   ``AppVersionsError/Code/unsupportedLedgerFormat``.
    public static func parse(_ bytes: [UInt8], path: String = "ledger") throws -> [LedgerEntry] {
        try LedgerFileFormat.parse(bytes, path: path, scope: .app).1
    }

    /// `bytes` with the checksum in its end line replaced by the right one for its body (the
    /// count is kept): what someone who edits a ledger by hand could write. Bytes without an
    /// end line come back unchanged.
    public static func resealed(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.last == 10 else { return bytes }
        let trailerStart = bytes[..<(bytes.endIndex - 1)].lastIndex(of: 10).map { $0 + 1 } ?? 0
        let words = String(decoding: bytes[trailerStart..<(bytes.endIndex - 1)], as: UTF8.self).split(separator: " ")
        guard words.count == 3, words[0] == "end" else { return bytes }
        var checksum = LedgerChecksum()
        checksum.add(bytes[..<trailerStart])
        return Array(bytes[..<trailerStart]) + Array("end \(words[1]) \(LedgerFileFormat.hex(checksum.value))\n".utf8)
    }

    /// The file ``FileLedgerStore`` writes for `entries`.
    public static func file(of entries: [LedgerEntry]) -> [UInt8] {
        var file = LedgerFileFormat()
        file.append(entries)
        return file.bytes
    }

    /// Folds `entries` into a scope's state as the migrator and the tracker do, and returns
    /// a one-line summary of it (so every folded value is read).
    public static func fold(_ entries: [LedgerEntry]) -> String {
        let ledger = Ledger(entries)
        let history = Ledger(entries, historyOnly: true)
        let lastDate = ledger.events.last.map { "\($0.date.timeIntervalSince1970)" } ?? "-"
        return "\(history.events.count) events (last \(lastDate)), \(ledger.systemEvents.count) system, floor \(ledger.floor.map { "\($0)" } ?? "-"), "
            + "migrated \(ledger.lastMigrated.map { "\($0.version)" } ?? "-"), \(ledger.finished.count) finished, "
            + "\(ledger.open.count) open, \(ledger.failures.count) failed, \(ledger.undone.count) undone, \(ledger.openUndos.count) open undos"
    }
}
