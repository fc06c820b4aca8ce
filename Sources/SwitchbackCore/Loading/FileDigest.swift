#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// SHA-256 from the system's OpenSSL libcrypto, opened with `dlopen` on first use rather
/// than linked: linking it costs about 2 ms at every start, and the launcher hashes a slot
/// only when its fingerprint changed. (SwitchbackCrypto's `SHA256` is the hasher that links
/// libcrypto, for rollbackctl-remote.)
public enum FileDigest {
    private typealias NewContext = @convention(c) () -> OpaquePointer?
    private typealias FreeContext = @convention(c) (OpaquePointer?) -> Void
    private typealias Algorithm = @convention(c) () -> OpaquePointer?
    private typealias Initialise = @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Int32
    private typealias Update = @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int) -> Int32
    private typealias Finalise = @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt32>?) -> Int32

    /// The system's libcrypto by its path: `libcrypto.so.3` in the directory the C library was
    /// loaded from. Opened by name, the dynamic loader would search `LD_LIBRARY_PATH` and the
    /// run paths for it, and this hash is what a slot is trusted by (docs/design.md). By name
    /// only when the C library's path is not absolute (found through a relative search path).
    static func libcryptoPath() -> String {
        guard let libc = switchback_libc_path(), libc.pointee == 0x2F else { return "libcrypto.so.3" }
        return FileSystem.parentDirectory(of: String(cString: libc)) + "/libcrypto.so.3"
    }

    /// The lowercase hex SHA-256 of the file at `path`, read in 256 KiB chunks.
    public static func hexDigest(ofFile path: String) throws(SwitchbackError) -> String {
        let (fd, openError) = retryingInterrupts { open(path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 { throw .system("Opening", path: path, errno: openError) }
        defer { close(fd) }
        return try hexDigest(ofDescriptor: fd, path: path)
    }

    /// The lowercase hex SHA-256 of the open file `fd`, read from offset 0 with `pread` (its
    /// offset is left alone); `path` names it in errors.
    public static func hexDigest(ofDescriptor fd: Int32, path: String) throws(SwitchbackError) -> String {
        var chunk = [UInt8](repeating: 0, count: 256 << 10)
        var offset: off_t = 0
        return hex(try sha256(of: path) { (feed: (UnsafeRawBufferPointer) -> Void) throws(SwitchbackError) in
            while true {
                let (count, readError) = chunk.withUnsafeMutableBytes { buffer in
                    retryingInterrupts { pread(fd, buffer.baseAddress, buffer.count, offset) }
                }
                if count < 0 { throw .system("Reading", path: path, errno: readError) }
                if count == 0 { break }
                offset += off_t(count)
                chunk.withUnsafeBytes { feed(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
        })
    }

    /// The SHA-256 of `bytes` (32 bytes); `what` names them in errors.
    public static func sha256(of bytes: [UInt8], what: String) throws(SwitchbackError) -> [UInt8] {
        try sha256(of: what) { (feed: (UnsafeRawBufferPointer) -> Void) throws(SwitchbackError) in
            bytes.withUnsafeBytes { feed($0) }
        }
    }

    /// SHA-256 through the system's libcrypto of what `body` feeds it.
    private static func sha256(of path: String, _ body: ((UnsafeRawBufferPointer) -> Void) throws(SwitchbackError) -> Void) throws(SwitchbackError) -> [UInt8] {
        let library: DynamicLibrary
        let crypto = libcryptoPath()
        do { library = try DynamicLibrary.open(at: crypto) } catch {
            throw SwitchbackError(.cryptoUnavailable, "Cannot load the system's libcrypto.so.3 (\(crypto)) to hash \(path): \(error.message) Install OpenSSL 3 (libssl3).", path: path)
        }
        guard let new = library.symbol(named: "EVP_MD_CTX_new", as: NewContext.self),
              let free = library.symbol(named: "EVP_MD_CTX_free", as: FreeContext.self),
              let sha256 = library.symbol(named: "EVP_sha256", as: Algorithm.self),
              let initialise = library.symbol(named: "EVP_DigestInit_ex", as: Initialise.self),
              let update = library.symbol(named: "EVP_DigestUpdate", as: Update.self),
              let finalise = library.symbol(named: "EVP_DigestFinal_ex", as: Finalise.self) else {
            throw SwitchbackError(.cryptoUnavailable, "The system's libcrypto.so.3 lacks the EVP digest functions; install OpenSSL 3 (libssl3).", path: path)
        }
        guard let context = new() else {
            throw SwitchbackError(.cryptoUnavailable, "libcrypto could not allocate a digest context.", path: path)
        }
        defer { free(context) }
        guard initialise(context, sha256(), nil) == 1 else {
            throw SwitchbackError(.cryptoUnavailable, "libcrypto could not start a SHA-256 digest.", path: path)
        }
        try body { buffer in _ = update(context, buffer.baseAddress, buffer.count) }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard finalise(context, &digest, &length) == 1, length == 32 else {
            throw SwitchbackError(.cryptoUnavailable, "libcrypto could not finish a SHA-256 digest.", path: path)
        }
        return digest
    }

    /// Lowercase hex of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `text` is a SHA-256 as written here: 64 lowercase hex digits.
    public static func isHexDigest(_ text: String) -> Bool { isLowercaseHex(text, digits: 64) }

    /// Whether `text` is exactly `digits` lowercase hex digits (a digest, an install id).
    public static func isLowercaseHex(_ text: String, digits: Int) -> Bool {
        // On the contiguous bytes: the launcher checks both slots' digests at every start.
        var text = text
        return text.withUTF8 { bytes in
            bytes.count == digits && bytes.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
        }
    }
}
