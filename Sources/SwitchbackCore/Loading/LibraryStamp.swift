#if canImport(Glibc)
import Glibc
#endif

/// A short stamp of the libraries a slot links: FNV-1a over each one's path and
/// fingerprint. Any change to any of them (a toolchain update, a replaced file) changes it.
public enum LibraryStamp {
    /// The stamp of `paths`, or nil when one is missing (then nothing is assumed).
    public static func of(_ paths: [String]) -> String? {
        of(list: paths.joined(separator: ","))
    }

    /// The stamp of a comma-separated list of paths, as the manifest keeps it (no String is
    /// made per path: each is copied, NUL-terminated, into one buffer for its `stat`).
    public static func of(list: String) -> String? {
        var list = list
        return list.withUTF8 { bytes -> String? in
            var hash: UInt64 = 0xCBF2_9CE4_8422_2325
            var found = false
            let stamped = withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(PATH_MAX) + 1) { name -> Bool in
                var start = 0
                while start < bytes.count {
                    var end = start
                    while end < bytes.count, bytes[end] != 0x2C { end += 1 }
                    defer { start = end + 1 }
                    let length = end - start
                    guard length > 0 else { continue }
                    guard length <= Int(PATH_MAX) else { return false }
                    var info = stat()
                    for index in 0..<length { name[index] = CChar(bitPattern: bytes[start + index]) }
                    name[length] = 0
                    guard stat(name.baseAddress!, &info) == 0 else { return false }
                    // The path's bytes, then the fingerprint's five numbers' bytes.
                    for index in start..<end { hash = (hash ^ UInt64(bytes[index])) &* 0x0000_0100_0000_01B3 }
                    let fingerprint = FileFingerprint(info)
                    func mix(_ field: UInt64) {
                        hash = (hash ^ 0x0A) &* 0x0000_0100_0000_01B3
                        var rest = field
                        for _ in 0..<8 {
                            hash = (hash ^ (rest & 0xFF)) &* 0x0000_0100_0000_01B3
                            rest >>= 8
                        }
                    }
                    mix(fingerprint.device)
                    mix(fingerprint.inode)
                    mix(UInt64(bitPattern: fingerprint.size))
                    mix(UInt64(bitPattern: fingerprint.modified))
                    mix(UInt64(bitPattern: fingerprint.changed))
                    hash = (hash ^ 0x0A) &* 0x0000_0100_0000_01B3
                    found = true
                }
                return true
            }
            guard stamped, found else { return nil }
            return String(hash, radix: 16)
        }
    }
}
