import Testing
import SwitchbackCrypto
#if canImport(Glibc)
import Glibc
#endif

/// libcrypto-backed Ed25519 and SHA-256 against published vectors.
@Suite("SwitchbackCrypto")
struct CryptoTests {
    private func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    @Test func sha256MatchesFIPSVectors() {
        #expect(SHA256.hash(Array("abc".utf8)).hexString == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hash([UInt8]()).hexString == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var hasher = SHA256()
        hasher.update(Array("ab".utf8))
        hasher.update(Array("c".utf8))
        #expect(hasher.finalize().hexString == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func sha256OfAFile() throws {
        let path = "/tmp/switchback-crypto-test-\(getpid())"
        let content = [UInt8](repeating: 0x61, count: 200_000)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        _ = content.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        defer { unlink(path) }
        #expect(try SHA256.hash(contentsOfFile: path) == SHA256.hash(content))
        let error = #expect(throws: CryptoError.self) { try SHA256.hash(contentsOfFile: path + ".missing") }
        #expect(error?.code == .fileUnreadable)
        #expect(error?.errno == ENOENT)
    }

    @Test func ed25519MatchesRFC8032TestVector1() throws {
        let key = try Ed25519PrivateKey(rawRepresentation: bytes("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        #expect(key.publicKey.rawRepresentation.hexString == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let signature = try key.signature(for: [UInt8]())
        #expect(signature.hexString == "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
        #expect(key.publicKey.isValidSignature(signature, for: [UInt8]()))
    }

    @Test func signVerifyRoundTripAndTamper() throws {
        let key = try Ed25519PrivateKey.generate()
        let message = Array("switchback".utf8)
        var signature = try key.signature(for: message)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: Array("switchbacK".utf8)))
        #expect(!key.publicKey.isValidSignature(signature.dropLast(), for: message))
        #expect(!(try Ed25519PrivateKey.generate()).publicKey.isValidSignature(signature, for: message))
        signature[0] ^= 0x80
        #expect(!key.publicKey.isValidSignature(signature, for: message))
    }

    @Test func pemRoundTrip() throws {
        let key = try Ed25519PrivateKey.generate()
        let privatePEM = try key.pemRepresentation()
        let publicPEM = try key.publicKey.pemRepresentation()
        #expect(privatePEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(publicPEM.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        #expect(try Ed25519PrivateKey(pemRepresentation: privatePEM).rawRepresentation == key.rawRepresentation)
        #expect(try Ed25519PublicKey(pemRepresentation: publicPEM) == key.publicKey)
        #expect(!key.description.contains(key.rawRepresentation.hexString))
    }

    @Test func keyIDIsTheFirst16HexOfTheRawKeyHash() throws {
        let key = try Ed25519PrivateKey.generate()
        #expect(key.publicKey.keyID == String(SHA256.hash(key.publicKey.rawRepresentation).hexString.prefix(16)))
    }

    @Test func invalidKeysThrowWithCodes() throws {
        let privateError = #expect(throws: CryptoError.self) { try Ed25519PrivateKey(pemRepresentation: "garbage") }
        #expect(privateError?.code == .invalidPrivateKey)
        let publicError = #expect(throws: CryptoError.self) { try Ed25519PublicKey(pemRepresentation: "garbage") }
        #expect(publicError?.code == .invalidPublicKey)
        let shortError = #expect(throws: CryptoError.self) { try Ed25519PublicKey(rawRepresentation: [1, 2, 3]) }
        #expect(shortError?.code == .invalidPublicKey)
        // A public key where a private key is expected.
        let publicPEM = try Ed25519PrivateKey.generate().publicKey.pemRepresentation()
        let swapped = #expect(throws: CryptoError.self) { try Ed25519PrivateKey(pemRepresentation: publicPEM) }
        #expect(swapped?.code == .invalidPrivateKey)
        #expect(swapped?.description.hasSuffix("generate one with 'rollbackctl keygen'.") == true)
    }
}
