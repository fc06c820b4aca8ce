import SwitchbackCrypto
import Testing

/// HMAC-SHA256 against RFC 4231's test vectors.
@Suite struct HMACTests {
    @Test func rfc4231TestCases() {
        // Test case 2: a short key.
        #expect(HMACSHA256.code(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)).hexString
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: a key longer than the block.
        #expect(HMACSHA256.code(key: [UInt8](repeating: 0xaa, count: 131), message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)).hexString
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }
}
