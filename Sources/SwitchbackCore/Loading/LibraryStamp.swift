#if canImport(Glibc)
import Glibc
#endif

/// A short stamp of the libraries a slot links: FNV-1a over each one's path and
/// fingerprint. Any change to any of them (a toolchain update, a replaced file) changes it.
public enum LibraryStamp {
    /// The stamp of `paths`, or nil when one is missing (then nothing is assumed), or has a
    /// comma (the manifest's list could not name it either).
    public static func of(_ paths: [String]) -> String? {
        guard !paths.contains(where: { $0.utf8.contains(0x2C) }) else { return nil }
        return of(list: paths.joined(separator: ","))
    }

    /// The stamp of a comma-separated list of paths, as the manifest keeps it (no String is
    /// made per path: each is copied, NUL-terminated, into one buffer for its `stat`).
    public static func of(list: String) -> String? {
        // A value, not a captured variable: nested functions that capture one box it, and each
        // of the 150 mixes of a start would check its exclusive access at run time.
        var hash = FNV1a()
        var list = list, found = false
        let stamped = list.withUTF8 { bytes in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(PATH_MAX) + 1) { name -> Bool in
                var start = 0
                while start < bytes.count {
                    var end = start
                    while end < bytes.count, bytes[end] != 0x2C { end += 1 }
                    defer { start = end + 1 }
                    let path = UnsafeBufferPointer(rebasing: bytes[start..<end])
                    guard !path.isEmpty else { continue }
                    guard path.count <= Int(PATH_MAX) else { return false }
                    _ = UnsafeMutableBufferPointer(rebasing: name[..<path.count]).initialize(from: path)
                    name[path.count] = 0
                    var info = stat()
                    guard stat(UnsafeRawPointer(name.baseAddress!).assumingMemoryBound(to: CChar.self), &info) == 0 else { return false }
                    for byte in path { hash.mix(UInt64(byte)) }
                    let fingerprint = FileFingerprint(info)
                    hash.mix(number: fingerprint.device)
                    hash.mix(number: fingerprint.inode)
                    hash.mix(number: UInt64(bitPattern: fingerprint.size))
                    hash.mix(number: UInt64(bitPattern: fingerprint.modified))
                    hash.mix(number: UInt64(bitPattern: fingerprint.changed))
                    hash.mix(0x0A)
                    found = true
                }
                return true
            }
        }
        guard stamped, found else { return nil }
        return String(hash.value, radix: 16)
    }

    /// 64-bit FNV-1a: a path's bytes, then each of the fingerprint's five numbers as "\n"
    /// and its 8 bytes, least significant first.
    struct FNV1a {
        private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

        mutating func mix(_ byte: UInt64) { value = (value ^ byte) &* 0x0000_0100_0000_01B3 }

        mutating func mix(number: UInt64) {
            mix(0x0A)
            for shift in stride(from: 0, to: 64, by: 8) { mix((number >> UInt64(shift)) & 0xFF) }
        }
    }
}
