/// A fast, incremental 64-bit checksum for ledger files: not cryptographic, it only
/// has to notice damage.
///
/// Bytes are consumed as little-endian 8-byte words, each folded in with
/// `h = (h ^ word) &* prime` (the FNV-1a step, a bijection, so any single changed word
/// always changes the result); ``value`` folds in the partial last word and the length,
/// then scrambles with the MurmurHash3 finaliser. Appending more bytes continues from
/// the saved state, so a ledger append does not re-read the file.
struct LedgerChecksum: Equatable {
    private var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    private var tail: UInt64 = 0
    private var tailCount = 0
    private var length: UInt64 = 0

    static let prime: UInt64 = 0x0000_0100_0000_01b3

    mutating func add(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { add($0) }
    }

    mutating func add(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var index = 0
        // Finish a partial word left by the previous call.
        while tailCount > 0 && tailCount < 8 && index < bytes.count {
            tail |= UInt64(bytes[index]) << (8 * UInt64(tailCount))
            tailCount += 1
            index += 1
        }
        if tailCount == 8 {
            hash = (hash ^ tail) &* Self.prime
            tail = 0
            tailCount = 0
        }
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            hash = (hash ^ word) &* Self.prime
            index += 8
        }
        while index < bytes.count {
            tail |= UInt64(bytes[index]) << (8 * UInt64(tailCount))
            tailCount += 1
            index += 1
        }
    }

    /// The checksum of everything added so far.
    var value: UInt64 {
        var h = (hash ^ tail) &* Self.prime
        h = (h ^ length) &* Self.prime
        h ^= h >> 33
        h = h &* 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h = h &* 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return h
    }
}
