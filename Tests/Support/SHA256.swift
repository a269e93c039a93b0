import CSDTestSHA

/// SHA-256 of bytes, hex: the corpus oracles' frame hashes (the C tests' own
/// implementation; Foundation on Linux has no CryptoKit).
public func sha256Hex(_ message: UnsafeRawBufferPointer) -> String {
    var s = sd_sha256()
    sd_sha256_init(&s)
    sd_sha256_update(&s, message.baseAddress, message.count)
    var out = [CChar](repeating: 0, count: 65)
    sd_sha256_hex(&s, &out)
    return String(decoding: out.prefix(64).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
