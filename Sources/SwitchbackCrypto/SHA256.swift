import CSwitchbackCrypto
#if canImport(Glibc)
import Glibc
#endif

/// A SHA-256 digest computed by libcrypto (`EVP_sha256`).
///
/// Use ``hash(_:)`` for bytes in memory, ``hash(contentsOfFile:)`` for a file read in
/// 64 KiB chunks, or feed an instance with ``update(_:)`` and call ``finalize()``.
/// The value is non-copyable because it owns a libcrypto digest context.
public struct SHA256: ~Copyable {
    /// The length of a SHA-256 digest in bytes.
    public static let byteCount = 32

    private let context: OpaquePointer

    /// Starts a new digest. Wraps `EVP_DigestInit_ex` with `EVP_sha256()`.
    ///
    /// Traps only if libcrypto cannot allocate a context (out of memory).
    public init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            fatalError("libcrypto could not start a SHA-256 digest: \(OpenSSL.drainErrors() ?? "out of memory")")
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    /// Adds bytes to the digest. Wraps `EVP_DigestUpdate`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        precondition(EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1, "EVP_DigestUpdate failed")
    }

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let array = Array(bytes)
        array.withUnsafeBytes { update($0) }
    }

    /// Finishes the digest and returns its 32 bytes. Wraps `EVP_DigestFinal_ex`.
    public consuming func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Self.byteCount)
        var length: UInt32 = 0
        precondition(EVP_DigestFinal_ex(context, &digest, &length) == 1 && length == 32, "EVP_DigestFinal_ex failed")
        return digest
    }

    /// The SHA-256 of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The SHA-256 of a file's contents, read in 64 KiB chunks (the file is never held in memory).
    ///
    /// Throws ``CryptoError`` with code ``CryptoError/Code/fileUnreadable`` and the `errno`
    /// if the file cannot be opened or read.
    public static func hash(contentsOfFile path: String) throws -> [UInt8] {
        let fd = retryingEINTR { open(path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 { throw CryptoError(.fileUnreadable, errno: errno, path: path) }
        defer { _ = close(fd) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in
                retryingEINTR { read(fd, raw.baseAddress, raw.count) }
            }
            if count < 0 { throw CryptoError(.fileUnreadable, errno: errno, path: path) }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
        return hasher.finalize()
    }
}
