#if canImport(Glibc)
import Glibc
#endif

/// A short stamp of the libraries a slot links: FNV-1a over each one's path and
/// fingerprint. Any change to any of them (a toolchain update, a replaced file) changes it.
public enum LibraryStamp {
    /// The stamp of `paths`, or nil when one is missing (then nothing is assumed).
    public static func of(_ paths: [String]) -> String? {
        guard !paths.isEmpty else { return nil }
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for path in paths {
            // One C string serves the stat and the hash of the path's bytes (no text is made).
            var info = stat()
            let found = path.withCString { name -> Bool in
                guard stat(name, &info) == 0 else { return false }
                var byte = name
                while byte.pointee != 0 {
                    hash = (hash ^ UInt64(UInt8(bitPattern: byte.pointee))) &* 0x0000_0100_0000_01B3
                    byte += 1
                }
                return true
            }
            guard found else { return nil }
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
        }
        return String(hash, radix: 16)
    }
}
