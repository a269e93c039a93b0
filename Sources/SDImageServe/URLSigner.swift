#if Serve
import CLibCrypto
import Foundation

/// imgproxy's signature: URL-safe base64 (no padding) of
/// HMAC-SHA256(key, salt + path), key and salt given in hex; shortened to
/// its first `signatureSize` bytes (`IMGPROXY_SIGNATURE_SIZE`), and with
/// several key/salt pairs (key rotation) any of them signs.
public struct URLSigner: Sendable {
    let pairs: [(key: [UInt8], salt: [UInt8])]
    let signatureSize: Int

    /// nil when either is not even-length hex or the key is empty.
    public init?(keyHex: String, saltHex: String) {
        self.init(keysHex: [keyHex], saltsHex: [saltHex])
    }

    /// Pairs by position (imgproxy's comma-separated IMGPROXY_KEY and
    /// IMGPROXY_SALT); nil when the counts differ, any is not hex, a key is
    /// empty, or the size is not 1...32.
    public init?(keysHex: [String], saltsHex: [String], signatureSize: Int = 32) {
        guard !keysHex.isEmpty, keysHex.count == saltsHex.count, (1...32).contains(signatureSize) else { return nil }
        var pairs: [(key: [UInt8], salt: [UInt8])] = []
        for (k, s) in zip(keysHex, saltsHex) {
            guard let key = Self.hex(k), !key.isEmpty, let salt = Self.hex(s) else { return nil }
            pairs.append((key, salt))
        }
        self.pairs = pairs
        self.signatureSize = signatureSize
    }

    /// The signature of `path` (everything after the signature segment, with its leading "/"), by the first pair.
    public func signature(of path: Substring) -> String {
        signature(of: path, pair: pairs[0])
    }

    func signature(of path: Substring, pair: (key: [UInt8], salt: [UInt8])) -> String {
        Self.base64URL(Data(Self.hmacSHA256(key: pair.key, pair.salt + Array(path.utf8)).prefix(signatureSize)))
    }

    /// HMAC-SHA256 (RFC 2104) of `message` under `key`, by libcrypto.
    static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var n: UInt32 = 0
        let ok = key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, o.baseAddress, &n)
                }
            }
        }
        // only fails when libcrypto cannot allocate its context
        precondition(ok != nil && n == 32, "libcrypto's HMAC-SHA256 failed")
        return Array(out.prefix(32))
    }

    /// SHA-256 of `data`, by libcrypto.
    static func sha256(_ data: Data) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        data.withUnsafeBytes { d in
            out.withUnsafeMutableBufferPointer { o in
                _ = SHA256(d.bindMemory(to: UInt8.self).baseAddress, d.count, o.baseAddress)
            }
        }
        return out
    }

    /// Whether `signature` signs `path` under any pair (each compared in constant time).
    public func verify(_ signature: Substring, path: Substring) -> Bool {
        let got = Array(signature.utf8)
        var ok = false
        for pair in pairs {
            let want = Array(self.signature(of: path, pair: pair).utf8)
            if want.count == got.count && zip(want, got).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 { ok = true }
        }
        return ok
    }

    static func base64URL(_ data: Data) -> String {
        String(data.base64EncodedString().map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }.filter { $0 != "=" })
    }

    static func hex(_ s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(u.count / 2)
        for i in stride(from: 0, to: u.count, by: 2) {
            guard let hi = nibble(u[i]), let lo = nibble(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 65...70: c - 55
        case 97...102: c - 87
        default: nil
        }
    }
}
#endif
