/// Lower-case hexadecimal text for bytes.
extension Sequence where Element == UInt8 {
    /// The bytes as lower-case hexadecimal, two characters per byte (`[0xAB, 0x01]` → `"ab01"`).
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
