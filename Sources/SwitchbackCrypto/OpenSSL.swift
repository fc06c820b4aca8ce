import CSwitchbackCrypto

/// Small internal helpers around libcrypto's conventions (error queue, BIOs, keys).
enum OpenSSL {
    /// Drains libcrypto's thread-local error queue into one line, or `nil` if it was empty.
    static func drainErrors() -> String? {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? nil : messages.joined(separator: "; ")
    }

    /// Wraps `EVP_PKEY_new_raw_private_key` for Ed25519; the caller frees the key.
    static func privateKey(raw: [UInt8]) -> OpaquePointer? {
        raw.withUnsafeBufferPointer { EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count) }
    }

    /// Wraps `EVP_PKEY_new_raw_public_key` for Ed25519; the caller frees the key.
    static func publicKey(raw: [UInt8]) -> OpaquePointer? {
        raw.withUnsafeBufferPointer { EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count) }
    }

    /// Wraps `EVP_PKEY_get_raw_private_key`.
    static func rawPrivateKey(of key: OpaquePointer) -> [UInt8]? {
        var length = 0
        guard EVP_PKEY_get_raw_private_key(key, nil, &length) == 1, length == 32 else { return nil }
        var bytes = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_get_raw_private_key(key, &bytes, &length) == 1, length == 32 else { return nil }
        return bytes
    }

    /// Wraps `EVP_PKEY_get_raw_public_key`.
    static func rawPublicKey(of key: OpaquePointer) -> [UInt8]? {
        var length = 0
        guard EVP_PKEY_get_raw_public_key(key, nil, &length) == 1, length == 32 else { return nil }
        var bytes = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_get_raw_public_key(key, &bytes, &length) == 1, length == 32 else { return nil }
        return bytes
    }

    /// Runs `body` with a read-only memory BIO over `text`'s UTF-8 bytes.
    static func withReadBIO<T>(_ text: String, _ body: (OpaquePointer) -> T?) -> T? {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { buffer -> T? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    /// Runs `write` against a fresh memory BIO and returns what it wrote as text.
    static func writeToString(_ write: (OpaquePointer) -> Int32) -> String? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return nil }
        var data: UnsafeMutablePointer<CChar>?
        let length = switchback_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { return nil }
        let bytes = UnsafeRawBufferPointer(start: data, count: length)
        return String(decoding: bytes, as: UTF8.self)
    }
}
