import CSDCore
import Foundation
import SDCoders

/// Well-formed HTTP validators (RFC 9110 §8.8): what a server sends is kept
/// and sent back in a conditional request only if it is one, so a hostile
/// ETag can never carry a header of its own.
public enum HTTPValidator {
    /// `"opaque"` or `W/"opaque"`: printable ASCII without `"` inside (or
    /// obs-text), at most 1 KiB.
    public static func etag(_ value: String?) -> String? {
        guard let value else { return nil }
        let bytes = Array(value.utf8)
        guard bytes.count <= 1024 else { return nil }
        let body = bytes.starts(with: Array("W/".utf8)) ? bytes.dropFirst(2) : bytes[...]
        guard body.count >= 2, body.first == 0x22, body.last == 0x22 else { return nil }
        return body.dropFirst().dropLast().allSatisfy { $0 == 0x21 || (0x23...0x7E).contains($0) || $0 >= 0x80 }
            ? value : nil
    }

    /// An HTTP-date: visible ASCII and spaces, at most 64 bytes.
    public static func date(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 64,
              value.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return value
    }
}

/// The start of a body and the validator (strong ETag, else Last-Modified)
/// of the response it came from: enough to ask for the rest.
public struct ResumableData: Sendable, Equatable {
    /// The body bytes received so far.
    public let data: Data
    /// The strong ETag (or Last-Modified date) sent as `If-Range`: a changed
    /// resource is sent whole instead of the rest.
    public let validator: String

    /// Bytes already received and the validator of the response they came from.
    public init(data: Data, validator: String) {
        self.data = data
        self.validator = validator
    }

    /// From a failed transfer's response and partial body, if the server said
    /// it serves ranges (or already did) and gave a strong validator.
    init?(response: DownloadResponse?, partial: Data) {
        guard let r = response, !partial.isEmpty, r.statusCode == 200 || r.statusCode == 206 else { return nil }
        let ranges = r.statusCode == 206
            || (r.value(forHTTPHeaderField: "Accept-Ranges")?.lowercased().contains("bytes") ?? false)
        let etag = HTTPValidator.etag(r.value(forHTTPHeaderField: "ETag")).flatMap { $0.hasPrefix("W/") ? nil : $0 }
        guard ranges, let v = etag ?? HTTPValidator.date(r.value(forHTTPHeaderField: "Last-Modified")) else { return nil }
        self.init(data: partial, validator: v)
    }
}
